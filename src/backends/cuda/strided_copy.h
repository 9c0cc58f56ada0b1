// The generic strided copy's parameters: plain C++17, no CUDA or voxrt headers, so the .cu
// launchers (cuda_ops.h), the host-side planning (copy_plan.h) and CPU-only unit tests share it.
#pragma once

#include <cstdint>

namespace voxrt::backends::cuda::ops {

inline constexpr int kMaxRank = 6;

// out[out_offset + sum(i_d * out_strides[d])] = in[in_offset + sum(i_d * in_strides[d])] over
// every index of `dims` (Transpose, Slice, Concat, Split, Expand).
struct StridedCopy {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t in_strides[kMaxRank] = {};
  std::int64_t out_strides[kMaxRank] = {};
  std::int64_t in_offset = 0;
  std::int64_t out_offset = 0;
};

// The same copy with axes of extent 1 dropped and each axis merged into the one outside it
// where both sides are contiguous across the two (a [B, C, T] -> [T, B, C] Transpose becomes a
// 2-D one): fewer divisions per element in the kernel, and a plain 2-D transpose shows as such.
inline StridedCopy merged_axes(const StridedCopy& copy) {
  for (int d = 0; d < copy.rank; ++d) {
    if (copy.dims[d] == 0) return copy;  // nothing to copy; the launcher returns early
  }
  StridedCopy merged;
  merged.in_offset = copy.in_offset;
  merged.out_offset = copy.out_offset;
  for (int d = 0; d < copy.rank; ++d) {
    if (copy.dims[d] == 1) continue;
    const int outer = merged.rank - 1;
    if (outer >= 0 && merged.in_strides[outer] == copy.in_strides[d] * copy.dims[d] &&
        merged.out_strides[outer] == copy.out_strides[d] * copy.dims[d]) {
      merged.dims[outer] *= copy.dims[d];
      merged.in_strides[outer] = copy.in_strides[d];
      merged.out_strides[outer] = copy.out_strides[d];
      continue;
    }
    merged.dims[merged.rank] = copy.dims[d];
    merged.in_strides[merged.rank] = copy.in_strides[d];
    merged.out_strides[merged.rank] = copy.out_strides[d];
    ++merged.rank;
  }
  if (merged.rank == 0) {  // a single element
    merged.rank = 1;
    merged.dims[0] = 1;
    merged.in_strides[0] = 1;
    merged.out_strides[0] = 1;
  }
  return merged;
}

}  // namespace voxrt::backends::cuda::ops
