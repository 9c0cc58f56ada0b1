// Factories of the dense CPU kernels, one per tactic; dense_registry.cpp picks among them.
#pragma once

#include <memory>

#include "backends/kernel.h"
#include "ir/graph.h"

namespace voxrt::backends::cpu::dense {

// A copy of what a kernel needs from its node after the graph is gone: op, name, attributes.
ir::Node detached_node(const ir::Node& node);

Expected<std::unique_ptr<Kernel>> make_conv_reference_kernel(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_conv_im2col_kernel(const ir::Node& node);
// blocked_activations: let oneDNN choose the layouts of X and Y too, reordering around the call.
Expected<std::unique_ptr<Kernel>> make_conv_onednn_kernel(const ir::Node& node,
                                                          bool blocked_activations);
// 2-D FFT convolution over tiles (conv_fft.cpp): offered for constant 2-D weights of at least 25
// taps, group 1 and dilation 1. The tile transforms are the power of two at or above
// tile_factor times the kernel (capped by the padded input when its dims are static): tactic
// "fft" takes 2, "fft_large_tiles" 4.
bool conv_fft_applies(const ir::Node& node, int tile_factor);
Expected<std::unique_ptr<Kernel>> make_conv_fft_kernel(const ir::Node& node, int tile_factor);
// Direct AVX2 convolution (conv_direct.cpp): constant 4-D weights, group 1, on a CPU with
// AVX2 and FMA. Meant for few input channels and large kernels, where im2col's GEMM is thin.
bool conv_direct_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_conv_direct_kernel(const ir::Node& node);
// Few output positions per image (conv_few_positions.cpp): constant 3-D to 5-D weights, group 1,
// on a CPU with AVX2 and FMA (AVX-512 used where present). Meant for a strided STFT-like
// convolution over one streaming chunk, where im2col's GEMM has only a handful of columns.
bool conv_few_positions_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_conv_few_positions_kernel(const ir::Node& node);
// Depthwise 1-D convolution on AVX-512 (conv_depthwise.cpp): group = channels, constant weights
// [C, 1, K]. Conformer's convolution module.
bool conv_depthwise_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_conv_depthwise_kernel(const ir::Node& node);
// Pointwise 1-D convolution on AVX-512 over packed W^T (conv_pointwise.cpp): kernel 1, stride 1,
// no padding, group 1, constant weights.
bool conv_pointwise_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_conv_pointwise_kernel(const ir::Node& node);

// Gemm, MatMul and FusedMatMul share one implementation per tactic.
Expected<std::unique_ptr<Kernel>> make_matmul_reference_kernel(const ir::Node& node);
// Einsum (einsum.cpp): the reference tactic only.
std::unique_ptr<Kernel> make_einsum_reference_kernel(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_matmul_openblas_kernel(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_matmul_onednn_kernel(const ir::Node& node);
// Our AVX-512 kernel on B packed in 64-column panels (matmul_packed.cpp): a constant 2-D B, A not
// transposed, C absent or one value per column, on a CPU with AVX-512. Meant for few rows
// (decoder steps, streaming chunks), where a call's time is the time to read the weights.
bool matmul_packed_applies(const ir::Node& node);
Expected<std::unique_ptr<Kernel>> make_matmul_packed_kernel(const ir::Node& node);

}  // namespace voxrt::backends::cpu::dense
