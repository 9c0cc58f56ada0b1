// The tagged state exchange of the persistent recurrent kernels (recurrent_ops.cu,
// recurrent_ksplit.cu): each element of h is one 8-byte word, the value in the low half and the
// number of the step that wrote it in the high half, stored and loaded as single morally strong
// (relaxed, GPU-scope) accesses. A reader that sees the tag it expects has the value of that
// step, with no fence, no arrival counter and no second round trip through L2 to learn that the
// writers are done: the data is its own flag.
#pragma once

#include <cuda_runtime.h>

namespace voxrt::backends::cuda::ops {

__device__ __forceinline__ void store_tagged(unsigned long long* p, float h, unsigned tag) {
  const unsigned long long word = (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(h);
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}
__device__ __forceinline__ ulonglong2 load_tagged_pair(const unsigned long long* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(v.x), "=l"(v.y)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ bool pair_has_tag(const ulonglong2& v, unsigned tag) {
  return static_cast<unsigned>(v.x >> 32) == tag && static_cast<unsigned>(v.y >> 32) == tag;
}

}  // namespace voxrt::backends::cuda::ops
