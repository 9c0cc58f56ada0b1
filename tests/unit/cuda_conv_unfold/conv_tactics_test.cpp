// Which convolutions list the unfold_w tactics (registry.cpp's tactics_for): 2-D, KW > 1,
// C * KW <= 64, and only when cuDNN loads; the NHWC ones at FP16/BF16 only. Needs no device.
#include <gtest/gtest.h>

#include <iostream>
#include <string>
#include <vector>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn_api.h"
#include "ir/graph.h"

namespace voxrt::backends::cuda {
namespace {

struct NamedPrecision {
  Precision precision;
  const char* name;
};
const NamedPrecision kPrecisions[] = {{Precision::kFp32, "fp32"},
                                      {Precision::kTf32, "tf32"},
                                      {Precision::kFp16, "fp16"},
                                      {Precision::kBf16, "bf16"}};

// The unfold_w tactics tactics_for lists for Conv(x [1, C, 12, 12], w [4, C, 3, KW]), or a 1-D
// Conv(x [1, C, 12], w [4, C, KW]).
std::vector<TacticInfo> unfold_tactics(std::int64_t channels, std::int64_t kernel_w, bool two_d,
                                       Precision precision) {
  ir::Graph g;
  const Dims x_dims = two_d ? Dims{1, channels, 12, 12} : Dims{1, channels, 12};
  const Dims w_dims = two_d ? Dims{4, channels, 3, kernel_w} : Dims{4, channels, kernel_w};
  ir::Value* x = g.add_value("x", DType::kF32, ir::sym_shape_from_dims(x_dims));
  g.inputs.push_back(x);
  ir::Value* w = g.add_constant("w", Tensor::zeros(DType::kF32, w_dims));
  ir::Value* y = g.add_value("y", DType::kF32, {}, false);
  ir::Node* conv = g.add_node(ir::OpKind::kConv, "conv", {x, w}, {y});
  conv->opset = 17;
  std::vector<TacticInfo> unfold;
  for (const TacticInfo& t : tactics_for(*conv, precision))
    if (t.name.find("unfold_w") != std::string::npos) unfold.push_back(t);
  return unfold;
}

std::vector<std::string> names(const std::vector<TacticInfo>& tactics) {
  std::vector<std::string> out;
  for (const TacticInfo& t : tactics) out.push_back(t.name);
  return out;
}

TEST(CudaConvUnfoldTactics, ListedForSmallTwoDimensionalConvsWhenCudnnLoads) {
  const bool cudnn = static_cast<bool>(cudnn_api());
  std::cout << "[ note ] cuDNN " << (cudnn ? "loads" : "does not load") << " here\n";
  for (const auto& [p, precision_name] : kPrecisions) {
    SCOPED_TRACE(precision_name);
    const bool low = p == Precision::kFp16 || p == Precision::kBf16;
    std::vector<std::string> want;
    if (cudnn) want = {"cudnn_unfold_w"};
    if (cudnn && low)
      want = {"cudnn_unfold_w", "cudnn_nhwc_unfold_w", "cudnn_nhwc_unfold_w_precomp"};
    EXPECT_EQ(names(unfold_tactics(1, 11, true, p)), want) << "C 1, KW 11 (DS2's conv.0)";
    EXPECT_EQ(names(unfold_tactics(2, 3, true, p)), want) << "C 2, KW 3";
    EXPECT_EQ(names(unfold_tactics(8, 8, true, p)), want) << "C * KW = 64";
    EXPECT_TRUE(unfold_tactics(13, 5, true, p).empty()) << "C * KW = 65";
    EXPECT_TRUE(unfold_tactics(4, 1, true, p).empty()) << "KW 1";
    EXPECT_TRUE(unfold_tactics(1, 11, false, p).empty()) << "1-D";
    if (cudnn && low) {
      const auto ids = unfold_tactics(1, 11, true, p);
      EXPECT_EQ(ids[0].id, kConvCudnnUnfoldW);
      EXPECT_EQ(ids[1].id, kConvCudnnNhwcUnfoldW);
      EXPECT_EQ(ids[2].id, kConvCudnnNhwcUnfoldWPrecomp);
    }
  }
}

}  // namespace
}  // namespace voxrt::backends::cuda
