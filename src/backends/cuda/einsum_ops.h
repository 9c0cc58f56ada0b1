// The Einsum kernel's launch (einsum.cu): the equation resolved on the host (ir::plan_einsum)
// into label sizes and, per operand, how far it moves when a label advances (0 where it
// broadcasts; a repeated label, a diagonal, adds its strides). Plain types only.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace voxrt::backends::cuda::ops {

inline constexpr int kEinsumMaxLabels = 16;
inline constexpr int kEinsumMaxOperands = 3;

struct EinsumIndex {
  int operands = 0;
  int labels = 0;
  std::int64_t size[kEinsumMaxLabels] = {};
  std::int64_t stride[kEinsumMaxOperands][kEinsumMaxLabels] = {};
  int output_rank = 0;
  int output[kEinsumMaxLabels] = {};  // the label of each output axis
  int summed_count = 0;
  int summed[kEinsumMaxLabels] = {};  // the labels the output drops
};

// out[o] = the sum over the dropped labels of the product of the operands' elements (float
// operands, the products and the sum in double, as the CPU reference computes them); one thread
// per output element.
cudaError_t einsum(const EinsumIndex& index, const float* const (&inputs)[kEinsumMaxOperands],
                   float* out, std::int64_t out_count, cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
