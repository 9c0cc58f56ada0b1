// Grouped and depthwise convolution (1-D as height 1, and 2-D), FP32 in and out: the naive
// reference kernel for any group count (the oracle, tactic 0) and a depthwise kernel for
// group == channels (each output channel reads one input channel: the Conformer convolution
// module's 31-tap depthwise Conv1d), both with bias and activation in their epilogue. Plain
// C++17 with no CUDA include: the host side and CPU-only unit tests use the shape and the
// launch plan too; the launchers are in cuda_ops.h.
#pragma once

#include <cstdint>

namespace voxrt::backends::cuda {

struct GroupedConv {
  std::int64_t batch = 0, channels = 0, height = 1, width = 0;
  std::int64_t out_channels = 0, kernel_h = 1, kernel_w = 0, out_h = 1, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  std::int64_t dilation_h = 1, dilation_w = 1;
  std::int64_t groups = 1;
};

// The depthwise kernel's launch: a block computes `threads` consecutive output columns of one
// output row (n, oc, oh), its input row segment and the filter staged in shared memory.
struct DepthwiseLaunch {
  int threads = 0;                // per block, a multiple of 32
  std::int64_t column_tiles = 0;  // blocks per output row
  std::int64_t blocks = 0;        // rows x column_tiles
  std::int64_t segment = 0;       // input columns a block stages per kernel row
  std::int64_t shared_bytes = 0;  // segment + the filter, floats
};

inline constexpr std::int64_t kDepthwiseMaxSharedBytes = 48 * 1024;

// The launch for `conv`, or threads == 0 when the depthwise kernel does not take it (groups !=
// channels, an empty output, or a segment beyond the shared-memory budget).
inline DepthwiseLaunch depthwise_launch(const GroupedConv& conv) {
  DepthwiseLaunch launch;
  if (conv.groups != conv.channels || conv.channels <= 0 || conv.out_channels % conv.groups != 0 ||
      conv.out_w <= 0 || conv.out_h <= 0 || conv.batch <= 0)
    return launch;
  std::int64_t threads = (conv.out_w + 31) / 32 * 32;
  if (threads > 256) threads = 256;
  launch.segment = (threads - 1) * conv.stride_w + (conv.kernel_w - 1) * conv.dilation_w + 1;
  launch.shared_bytes = (launch.segment + conv.kernel_h * conv.kernel_w) * 4;
  if (launch.shared_bytes > kDepthwiseMaxSharedBytes) return DepthwiseLaunch{};
  launch.threads = static_cast<int>(threads);
  launch.column_tiles = (conv.out_w + threads - 1) / threads;
  launch.blocks = conv.batch * conv.out_channels * conv.out_h * launch.column_tiles;
  if (launch.blocks > 0x7fffffff) return DepthwiseLaunch{};
  return launch;
}

}  // namespace voxrt::backends::cuda
