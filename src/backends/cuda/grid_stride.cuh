// Grid sizes for the backend's grid-stride kernels: enough blocks to cover n elements, capped
// (the loops cover the rest), at least one.
#pragma once

#include <cstdint>

namespace voxrt::backends::cuda::ops {

inline unsigned grid_stride_blocks(std::int64_t n, int threads_per_block) {
  std::int64_t blocks = (n + threads_per_block - 1) / threads_per_block;
  if (blocks > (1 << 20)) blocks = 1 << 20;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace voxrt::backends::cuda::ops
