// The cuDNN unfold_w convolution tactics: a convolution with few input channels rewritten so that
// the kernel's columns become channels,
//   x'[b, c * KW + j, h, ow] = x[b, c, h, ow * stride_w - pad_left + j * dilation_w]  (0 outside)
//   w'[k, c * KW + j, r, 0]  = w[k, c, r, j]
// and run as a (KH x 1) convolution over x' (stride (stride_h, 1), pad (pad_h, 0), input width
// out_w): the same result. A single-channel input (DS2's first layer) is padded to 8 channels
// inside cuDNN, 8x the arithmetic; unfolded, its 11 columns become 16 channels instead.
// Plain C++17 and no CUDA or voxrt headers, so the .cu kernel (cuda_ops.h), the host side and
// CPU-only unit tests share it; unfolded_values() is the kernel's element mapping itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__CUDACC__)
#define VOXRT_HOST_DEVICE __host__ __device__
#else
#define VOXRT_HOST_DEVICE
#endif

namespace voxrt::backends::cuda {
namespace ops {

// x [batch, channels, height, width] float -> x' [batch, unfolded_channels, height, out_w], or
// [batch, height, out_w, unfolded_channels] when nhwc. Channels from channels * kernel_w on are
// zero (the 8-channel alignment of cuDNN's NHWC FP16/BF16 convolutions).
struct UnfoldW {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t kernel_w = 1, stride_w = 1, pad_left = 0, dilation_w = 1, out_w = 0;
  std::int64_t unfolded_channels = 0;
  bool nhwc = false;
};

// The kernel's arithmetic is 32-bit: x and x' must each have fewer elements than this.
inline constexpr std::int64_t kUnfoldWMaxElements = std::int64_t{1} << 30;

// values[k] = x'[b, first_channel + k, h, ow] for k < kCount. The channel's (c, j) is split once
// and then stepped, so a run of channels costs one division.
template <int kCount>
VOXRT_HOST_DEVICE inline void unfolded_values(const UnfoldW& u, const float* x, std::int64_t b,
                                              int h, int ow, int first_channel,
                                              float (&values)[kCount]) {
  const int kernel_w = static_cast<int>(u.kernel_w), width = static_cast<int>(u.width);
  const int dilation_w = static_cast<int>(u.dilation_w);
  const int real_channels = static_cast<int>(u.channels) * kernel_w;
  const int plane = static_cast<int>(u.height) * width;
  const float* row = x + b * u.channels * u.height * u.width + static_cast<std::int64_t>(h) * width;
  const int iw_base = ow * static_cast<int>(u.stride_w) - static_cast<int>(u.pad_left);
  int c = first_channel / kernel_w;
  int j = first_channel - c * kernel_w;
  for (int k = 0; k < kCount; ++k) {
    const int iw = iw_base + j * dilation_w;
    const bool inside = first_channel + k < real_channels && iw >= 0 && iw < width;
    values[k] = inside ? row[c * plane + iw] : 0.0f;
    if (++j == kernel_w) {
      j = 0;
      ++c;
    }
  }
}

}  // namespace ops

// Above this many unfolded channels (C * KW) x' grows too much against what cuDNN saves.
inline constexpr std::int64_t kUnfoldWMaxChannels = 64;

// Whether the unfold_w tactics take a convolution with this weight ([OC, C, KH, KW] for 2-D):
// 2-D, KW > 1 and C * KW <= kUnfoldWMaxChannels.
bool unfold_w_applies(std::size_t weight_rank, std::int64_t channels, std::int64_t kernel_w);

// C * KW, rounded up to a multiple of 8 for NHWC (cuDNN's FP16/BF16 NHWC kernels want it).
std::int64_t unfold_w_channels(std::int64_t channels, std::int64_t kernel_w, bool nhwc);

// w [OC, C, KH, KW] -> w' [OC, unfolded_channels, KH, 1], or KRSC [OC, KH, 1, unfolded_channels]
// when channels_last; the padding channels are zero.
std::vector<float> unfold_w_filter(const float* w, std::int64_t out_channels, std::int64_t channels,
                                   std::int64_t kernel_h, std::int64_t kernel_w,
                                   std::int64_t unfolded_channels, bool channels_last);

// x' on the host, in u's layout, through the device kernel's own mapping (unfolded_values), with
// the NHWC kernel's runs of 8 channels (the test oracle of ops::unfold_w).
std::vector<float> unfold_w_input(const ops::UnfoldW& u, const float* x);

}  // namespace voxrt::backends::cuda
