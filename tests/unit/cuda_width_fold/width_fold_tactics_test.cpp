// Which convolutions list the width-fold tactics (width_fold_listed_for, what registry.cpp's
// tactics_for asks; for the cuDNN ones when cuDNN loads): 2-D, FP16/BF16 (the GEMM ones at every
// precision), the input width known at build time, one tactic per distinct fold. Needs no device.
#include <gtest/gtest.h>

#include <vector>

#include "backends/cuda/cuda_common.h"
#include "ir/graph.h"

namespace voxrt::backends::cuda {
namespace {

// The width-fold tactics listed for Conv(x [4, 32, 81, width], w [32, 32, 21, 11]) with DS2's
// conv.3 attributes (stride 2 x 1, pads 10 / 5); x's width is symbolic when width is negative.
std::vector<TacticId> listed(std::int64_t width, Precision p) {
  constexpr std::int64_t kernel_w = 11;
  ir::Graph g;
  ir::SymShape x_shape = ir::sym_shape_from_dims({4, 32, 81, width < 0 ? 1 : width});
  if (width < 0) x_shape[3] = ir::Dim::symbolic("time");
  ir::Value* x = g.add_value("x", DType::kF32, x_shape);
  g.inputs.push_back(x);
  ir::Value* w = g.add_constant("w", Tensor::zeros(DType::kF32, {32, 32, 21, kernel_w}));
  ir::Value* y = g.add_value("y", DType::kF32, {}, false);
  ir::Node* conv = g.add_node(ir::OpKind::kConv, "conv", {x, w}, {y});
  conv->opset = 17;
  conv->attrs.set("strides", std::vector<std::int64_t>{2, 1});
  conv->attrs.set("pads", std::vector<std::int64_t>{10, kernel_w / 2, 10, kernel_w / 2});
  std::vector<TacticId> ids;
  for (TacticId t = kConvWidthFoldFirst; t <= kConvWidthFoldGemmSecond; ++t)
    if (width_fold_listed_for(*conv, p, t)) ids.push_back(t);
  return ids;
}

TEST(CudaWidthFoldTactics, ListedOncePerDistinctFoldAtHalfPrecision) {
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    // 8 columns: tiles of 8 and 16 are one fold (listed once), tiles of 4 another, and the
    // second variant of the first (cuDNN's precomputed GEMM / cuBLASLt's second candidate).
    EXPECT_EQ(listed(8, p),
              (std::vector<TacticId>{kConvWidthFoldFirst, kConvWidthFoldFirst + 1,
                                     kConvWidthFoldPrecomp, kConvWidthFoldGemmFirst,
                                     kConvWidthFoldGemmFirst + 1, kConvWidthFoldGemmSecond}));
    // 100 columns (the 2 s BiLSTM): every tile width is its own fold.
    EXPECT_EQ(listed(100, p),
              (std::vector<TacticId>{kConvWidthFoldFirst, kConvWidthFoldFirst + 1,
                                     kConvWidthFoldFirst + 2, kConvWidthFoldPrecomp,
                                     kConvWidthFoldGemmFirst, kConvWidthFoldGemmFirst + 1,
                                     kConvWidthFoldGemmFirst + 2, kConvWidthFoldGemmSecond}));
    // The width unknown until run time: the filter cannot be folded at build time.
    EXPECT_TRUE(listed(-1, p).empty());
  }
  // FP32 / TF32: the GEMM tactics only (cuBLASLt with FP32 operands; no cuDNN tensor cores).
  for (Precision p : {Precision::kFp32, Precision::kTf32})
    EXPECT_EQ(listed(8, p),
              (std::vector<TacticId>{kConvWidthFoldGemmFirst, kConvWidthFoldGemmFirst + 1,
                                     kConvWidthFoldGemmSecond}));
}

}  // namespace
}  // namespace voxrt::backends::cuda
