// Einsum on the device (einsum_ops.h): one thread per output element, walking the summed labels
// as an odometer.
#include "backends/cuda/einsum_ops.h"
#include "backends/cuda/grid_stride.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 128;

struct EinsumInputs {
  const float* data[kEinsumMaxOperands];
};

__global__ void einsum_kernel(EinsumIndex index, EinsumInputs in, float* out,
                              std::int64_t out_count) {
  for (std::int64_t o = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       o < out_count; o += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t base[kEinsumMaxOperands] = {};
    std::int64_t rest = o;
    for (int a = index.output_rank - 1; a >= 0; --a) {
      const int label = index.output[a];
      const std::int64_t v = rest % index.size[label];
      rest /= index.size[label];
      for (int i = 0; i < index.operands; ++i) base[i] += v * index.stride[i][label];
    }
    bool empty = false;
    for (int s = 0; s < index.summed_count; ++s) empty = empty || index.size[index.summed[s]] == 0;
    double total = 0.0;
    std::int64_t value[kEinsumMaxLabels] = {};
    std::int64_t offset[kEinsumMaxOperands];
    for (int i = 0; i < index.operands; ++i) offset[i] = base[i];
    while (!empty) {
      double product = 1.0;
      for (int i = 0; i < index.operands; ++i) product *= in.data[i][offset[i]];
      total += product;
      int s = index.summed_count - 1;
      for (; s >= 0; --s) {  // the odometer: the last summed label turns fastest
        const int label = index.summed[s];
        if (++value[s] < index.size[label]) {
          for (int i = 0; i < index.operands; ++i) offset[i] += index.stride[i][label];
          break;
        }
        for (int i = 0; i < index.operands; ++i)
          offset[i] -= (index.size[label] - 1) * index.stride[i][label];
        value[s] = 0;
      }
      if (s < 0) break;
    }
    out[o] = static_cast<float>(total);
  }
}

}  // namespace

cudaError_t einsum(const EinsumIndex& index, const float* const (&inputs)[kEinsumMaxOperands],
                   float* out, std::int64_t out_count, cudaStream_t stream) {
  if (out_count <= 0) return cudaSuccess;
  if (index.operands < 1 || index.operands > kEinsumMaxOperands) return cudaErrorInvalidValue;
  EinsumInputs in{};
  for (int i = 0; i < index.operands; ++i) in.data[i] = inputs[i];
  einsum_kernel<<<grid_stride_blocks(out_count, kThreads), kThreads, 0, stream>>>(index, in, out,
                                                                                  out_count);
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
