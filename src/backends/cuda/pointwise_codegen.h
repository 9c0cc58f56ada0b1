// CUDA C++ source for a FusedPointwise node's register program (ir/pointwise_program.h), compiled
// with NVRTC at build time (nvrtc_compile.h) and stored in the engine (fused_pointwise.cpp).
//
// The source holds two kernels over the same straight-line evaluation of the program (one
// float register per instruction, constants as exact bit patterns):
//   kPointwiseFlatKernel     output element i reads element i of each input, or element 0 of an
//                            input marked in scalar_mask (inputs of the output's shape or of one
//                            element: no index arithmetic at all);
//   kPointwiseStridedKernel  any numpy broadcast: element offsets from the output index through
//                            per-input strides (0 on broadcast dims), rank <= kPointwiseMaxRank.
// Both take one PointwiseParams by value; the source declares the same struct, so the host and
// the device agree on its layout (the source static_asserts the host's sizeof).
// No CUDA header is needed here: the text is plain C++, unit-tested without a device.
#pragma once

#include <cstdint>
#include <string>

#include "ir/pointwise_program.h"

namespace voxrt::backends::cuda {

inline constexpr int kPointwiseMaxRank = 6;
// Inputs one fused kernel takes on the CUDA backend (the parameters travel by value).
inline constexpr int kPointwiseMaxInputs = 16;
inline constexpr char kPointwiseFlatKernel[] = "voxrt_pointwise_flat";
inline constexpr char kPointwiseStridedKernel[] = "voxrt_pointwise_strided";

// Kernel parameters, by value (one layout on host and device: plain fields, no padding holes
// that differ between compilers since every member is 8 bytes wide or an array of such).
struct PointwiseParams {
  const float* in[kPointwiseMaxInputs] = {};
  float* out = nullptr;
  std::int64_t count = 0;
  std::int64_t rank = 0;
  std::int64_t scalar_mask = 0;  // flat kernel: bit k set = input k has one element
  std::int64_t dims[kPointwiseMaxRank] = {};
  std::int64_t strides[kPointwiseMaxInputs][kPointwiseMaxRank] = {};
};

// The two kernels for `program` (validated already), with `name` in a leading comment so a
// compile log names the node.
std::string pointwise_kernel_source(const ir::PointwiseProgram& program, const std::string& name);

// The C++ expression that instruction `index` of `program` computes, over registers named r<k>
// ("(r0 * r2)", "voxrt_sigmoid(r3)"); exposed for tests and error messages.
std::string pointwise_instruction_expression(const ir::PointwiseProgram& program,
                                             std::size_t index);

}  // namespace voxrt::backends::cuda
