// The direct_tc convolution tactic (kConvDirectTensorCore): a 2-D convolution with a short
// reduction (K = C * KH * KW <= 1024) and few output channels run as an implicit GEMM on WMMA
// tensor cores, y[b, :, p] = A[p, :] x Wm, where A[p, k] = x at output position p and tap k
// (gathered, never materialized) and Wm is the [Kpad, OC] filter matrix, row k = (c, r, s) in
// OIHW order. DS2's one-channel first layer is its case: cuDNN pads the channel to 8.
// Plain C++17 and no CUDA or voxrt headers, so the .cu kernel (cuda_ops.h), the host side and
// CPU-only unit tests share it; direct_conv_tap(), direct_conv_window() and direct_conv_input()
// are the kernel's own gather.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#ifndef VOXRT_HOST_DEVICE
#if defined(__CUDACC__)
#define VOXRT_HOST_DEVICE __host__ __device__
#else
#define VOXRT_HOST_DEVICE
#endif
#endif

namespace voxrt::backends::cuda {
namespace ops {

// x [batch, channels, height, width] float -> y [batch, out_channels, out_h, out_w] float.
// 32-bit: the launcher's caller checks direct_conv_fits().
struct DirectConv {
  int batch = 0, channels = 0, height = 0, width = 0;
  int out_channels = 0, kernel_h = 1, kernel_w = 1, out_h = 0, out_w = 0;
  int stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1, dilation_w = 1;
  VOXRT_HOST_DEVICE int k() const { return channels * kernel_h * kernel_w; }
  // K rounded up to the WMMA step: the filter matrix's rows.
  VOXRT_HOST_DEVICE int k_padded() const { return (k() + 15) / 16 * 16; }
};

// Tap k = (c, r, s) of the window, relative to the window's top-left input element:
// x_image[ih0 * width + iw0 + offset] when 0 <= ih0 + dh < height and 0 <= iw0 + dw < width.
struct DirectConvTap {
  int offset = 0, dh = 0, dw = 0;
};
// dh of a tap past K: no window row reaches the image with it (always reads zero).
inline constexpr int kDirectConvNoTap = -(1 << 30);

VOXRT_HOST_DEVICE inline DirectConvTap direct_conv_tap(const DirectConv& s, int k) {
  DirectConvTap t;
  if (k >= s.k()) {
    t.dh = kDirectConvNoTap;
    return t;
  }
  const int window = s.kernel_h * s.kernel_w;
  const int c = k / window, rs = k - c * window;
  const int r = rs / s.kernel_w, j = rs - r * s.kernel_w;
  t.dh = r * s.dilation_h;
  t.dw = j * s.dilation_w;
  t.offset = (c * s.height + t.dh) * s.width + t.dw;
  return t;
}

// The top-left input element of output position (oh, ow)'s window (may lie in the padding).
struct DirectConvWindow {
  int ih0 = 0, iw0 = 0;
};
VOXRT_HOST_DEVICE inline DirectConvWindow direct_conv_window(const DirectConv& s, int oh, int ow) {
  return {oh * s.stride_h - s.pad_top, ow * s.stride_w - s.pad_left};
}

// A[p, k]: the input under tap t of window w in the image at x_image ([channels, height,
// width]), 0 in the padding. Never reads outside the image.
VOXRT_HOST_DEVICE inline float direct_conv_input(const DirectConv& s, const float* x_image,
                                                 const DirectConvWindow& w,
                                                 const DirectConvTap& t) {
  const int ih = w.ih0 + t.dh, iw = w.iw0 + t.dw;
  const bool inside = ih >= 0 && ih < s.height && iw >= 0 && iw < s.width;
  return inside ? x_image[w.ih0 * s.width + w.iw0 + t.offset] : 0.0f;
}

}  // namespace ops

// The kernel's limits: K = C * KH * KW <= 1024 (the whole filter matrix is staged in shared
// memory), OC a multiple of 16 (the WMMA tile) and at most 64 (one block holds all of them).
inline constexpr std::int64_t kDirectConvMaxK = 1024;
inline constexpr std::int64_t kDirectConvMaxOutChannels = 64;
// Its index arithmetic is 32-bit: x and y must each have fewer elements than this.
inline constexpr std::int64_t kDirectConvMaxElements = std::int64_t{1} << 31;

// Whether direct_tc takes a convolution with this weight ([OC, C, KH, KW] for 2-D) and group at
// a precision whose operands are FP16 or BF16 (`half_operands`).
bool direct_conv_applies(std::size_t weight_rank, std::int64_t group, std::int64_t out_channels,
                         std::int64_t channels, std::int64_t kernel_h, std::int64_t kernel_w,
                         bool half_operands);

// Whether x and y of this shape fit the kernel's 32-bit index arithmetic.
bool direct_conv_fits(std::int64_t x_elements, std::int64_t y_elements);

// w [OC, C, KH, KW] -> the filter matrix [k_padded, OC] (row-major), rows from K on zero.
std::vector<float> direct_conv_filter(const float* w, std::int64_t out_channels,
                                      std::int64_t channels, std::int64_t kernel_h,
                                      std::int64_t kernel_w);

// y on the host through the kernel's own gather (direct_conv_tap / direct_conv_input) and the
// filter matrix, in float with double accumulation (the test oracle of ops::direct_conv's
// indexing; bias and activation are left out).
std::vector<float> direct_conv_reference(const ops::DirectConv& s, const float* x,
                                         const std::vector<float>& filter);

}  // namespace voxrt::backends::cuda
