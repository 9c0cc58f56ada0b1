// float -> the element type a CUDA kernel stores (float, FP16 or BF16, round to nearest), shared
// by the pointwise conversions, the im2col and direct_tc convolutions and the recurrent kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace voxrt::backends::cuda::ops {

template <typename T>
__device__ __forceinline__ T from_float(float v);
template <>
__device__ __forceinline__ float from_float<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_float<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

}  // namespace voxrt::backends::cuda::ops
