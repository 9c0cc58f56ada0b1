// Which convolutions list direct_tc (registry.cpp's tactics_for): 2-D, group 1,
// C * KH * KW <= 1024, OC a multiple of 16 up to 64, FP16/BF16 only, with or without cuDNN.
// Needs no device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "ir/graph.h"

namespace voxrt::backends::cuda {
namespace {

// Whether tactics_for lists direct_tc for Conv(x [1, C, 12, 12], w [OC, C, KH, KW]) (or the
// 1-D Conv(x [1, C, 12], w [OC, C, KW]) when kernel_h is 0), and with which id.
bool lists_direct_tc(std::int64_t out_channels, std::int64_t channels, std::int64_t kernel_h,
                     std::int64_t kernel_w, Precision precision, std::int64_t group = 1) {
  ir::Graph g;
  const bool two_d = kernel_h > 0;
  const Dims x_dims = two_d ? Dims{1, channels * group, 12, 12} : Dims{1, channels * group, 12};
  const Dims w_dims = two_d ? Dims{out_channels, channels, kernel_h, kernel_w}
                            : Dims{out_channels, channels, kernel_w};
  ir::Value* x = g.add_value("x", DType::kF32, ir::sym_shape_from_dims(x_dims));
  g.inputs.push_back(x);
  ir::Value* w = g.add_constant("w", Tensor::zeros(DType::kF32, w_dims));
  ir::Value* y = g.add_value("y", DType::kF32, {}, false);
  ir::Node* conv = g.add_node(ir::OpKind::kConv, "conv", {x, w}, {y});
  conv->opset = 17;
  if (group != 1) conv->attrs.set("group", group);
  const auto tactics = tactics_for(*conv, precision);
  const auto it = std::find_if(tactics.begin(), tactics.end(),
                               [](const TacticInfo& t) { return t.name == "direct_tc"; });
  if (it == tactics.end()) return false;
  EXPECT_EQ(it->id, kConvDirectTensorCore);
  return true;
}

TEST(CudaDirectConvTactics, ListedForSmallKConvsAtHalfPrecisionOnly) {
  for (Precision p : {Precision::kFp16, Precision::kBf16}) {
    SCOPED_TRACE(p == Precision::kFp16 ? "fp16" : "bf16");
    EXPECT_TRUE(lists_direct_tc(32, 1, 41, 11, p)) << "DS2's conv.0";
    EXPECT_TRUE(lists_direct_tc(16, 2, 3, 5, p));
    EXPECT_TRUE(lists_direct_tc(64, 4, 16, 16, p)) << "K 1024";
    EXPECT_FALSE(lists_direct_tc(64, 5, 15, 14, p)) << "K 1050";
    EXPECT_FALSE(lists_direct_tc(8, 1, 5, 3, p)) << "OC 8";
    EXPECT_FALSE(lists_direct_tc(80, 1, 5, 3, p)) << "OC 80";
    EXPECT_FALSE(lists_direct_tc(32, 1, 0, 11, p)) << "1-D";
  }
  for (Precision p : {Precision::kFp32, Precision::kTf32}) {
    SCOPED_TRACE(p == Precision::kFp32 ? "fp32" : "tf32");
    EXPECT_FALSE(lists_direct_tc(32, 1, 41, 11, p));
  }
}

}  // namespace
}  // namespace voxrt::backends::cuda
