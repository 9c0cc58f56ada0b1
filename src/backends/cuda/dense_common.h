// What the dense kernels share (dense.cpp, grouped_conv.cpp): the fused activation of FusedConv /
// FusedMatMul and a convolution's strides, pads and dilations.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

struct Activation {
  bool present = false;
  bool relu = false;  // fused into the cuBLASLt epilogue
  ops::UnaryOp op = ops::UnaryOp::kIdentity;
  float alpha = 0.0f, beta = 0.0f;
  // A clamp after the activation (activation_clamp_min/_max): one more in-place Clip pass on
  // the output, whatever the tactic (ClampedKernel in dense.cpp).
  bool has_clamp = false;
  float clamp_min = 0.0f, clamp_max = 0.0f;
};

// The node's fused activation (none for plain Conv / MatMul / Gemm); unsupported for an
// activation the kernels do not have.
Expected<Activation> read_activation(const ir::Node& node);

struct ConvAttrs {
  std::vector<std::int64_t> strides, pads, dilations;
};

// Strides, dilations and pads [begin..., end...] of a convolution over `spatial` axes (auto_pad
// VALID: no pads).
ConvAttrs read_conv_attrs(const ir::Node& node, std::size_t spatial);

bool is_conv(const ir::Node& node);

// [OC, C, K...] -> [OC, K..., C] (cuDNN's KRSC filter for NHWC data; C per group when grouped).
std::vector<float> filter_to_channels_last(std::span<const float> w, std::int64_t out_channels,
                                           std::int64_t channels);
// A conv's bias [OC] as float on the device (for the epilogues that add it apart), or null.
Expected<const float*> upload_bias(const ir::Node& node, std::int64_t out_channels,
                                   KernelBuildContext& build);

// The skinny GEMM tactic (skinny_gemm.cpp): whether it is listed for the node, and its kernel on
// the uploaded weight (the precision's type, [K, N]).
bool skinny_gemm_listed(const ir::Node& node, Precision precision);
Expected<std::unique_ptr<CudaKernel>> make_skinny_gemm_kernel(const ir::Node& node,
                                                              const void* weight, ops::LowType type,
                                                              const Activation& act);

// A grouped Conv / FusedConv (grouped_conv.cpp) with tactic `tactic` of grouped_conv_tactics.
Expected<std::unique_ptr<CudaKernel>> make_grouped_conv_kernel(const ir::Node& node,
                                                               TacticId tactic,
                                                               const Activation& act,
                                                               KernelBuildContext& build);

}  // namespace voxrt::backends::cuda
