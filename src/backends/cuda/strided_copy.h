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

}  // namespace voxrt::backends::cuda::ops
