// Warp-wide float reductions by butterfly shuffles (every lane gets the result), shared by the
// normalization and attention kernels. The max ignores NaN as fmaxf does.
#pragma once

namespace voxrt::backends::cuda::ops {

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

}  // namespace voxrt::backends::cuda::ops
