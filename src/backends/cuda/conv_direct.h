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

#include "backends/cuda/host_device.h"

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

// The kernel's tile and staging geometry (conv_direct.cu): a block computes 64 output positions
// of one image (flattened over (oh, ow)) and stages A 32 k at a time; rows of A and columns of C
// in shared memory are padded by 16 bytes so that the rows of a WMMA load fall in different banks.
inline constexpr int kDirectConvTilePositions = 64;
inline constexpr int kDirectConvChunk = 32;
inline constexpr int kDirectConvAStride = kDirectConvChunk + 8;          // halves per row of A
inline constexpr int kDirectConvCStride = kDirectConvTilePositions + 4;  // floats per column of C

// The region path: per tile, the input rows its positions read are staged in shared memory once,
// zero-padded and converted to the operand type, as [channels][rows][cols] plus one zero element
// at index zero() (what taps past K read). Row i of the region is ih = oh_first * stride_h -
// pad_top + i (oh_first: the tile's first output row), column j is iw = j - pad_left; elements
// outside the image are 0. rows covers the most output rows (`out_rows`) any tile of an image
// spans, cols the columns any window reads. A[p, k] = region[base(p) + tap(k)], no bounds check.
struct DirectConvRegion {
  int out_rows = 0, rows = 0, cols = 0;
  VOXRT_HOST_DEVICE int channel_elements() const { return rows * cols; }
  // The zero element's index, after the C channels.
  VOXRT_HOST_DEVICE int zero(const DirectConv& s) const { return s.channels * rows * cols; }
};

// Tap k = (c, r, s) of the region path: the offset of (c, r * dilation_h, s * dilation_w) from
// a window's top-left element in the region; kDirectConvRegionNoTap past K.
inline constexpr int kDirectConvRegionNoTap = -1;
VOXRT_HOST_DEVICE inline int direct_conv_region_tap(const DirectConv& s, const DirectConvRegion& g,
                                                    int k) {
  if (k >= s.k()) return kDirectConvRegionNoTap;
  const int window = s.kernel_h * s.kernel_w;
  const int c = k / window, rs = k - c * window;
  const int r = rs / s.kernel_w, j = rs - r * s.kernel_w;
  return c * g.channel_elements() + r * s.dilation_h * g.cols + j * s.dilation_w;
}

// The region offset of output position (oh, ow)'s window in the tile whose first output row is
// oh_first.
VOXRT_HOST_DEVICE inline int direct_conv_region_base(const DirectConv& s, const DirectConvRegion& g,
                                                     int oh_first, int oh, int ow) {
  return (oh - oh_first) * s.stride_h * g.cols + ow * s.stride_w;
}

// The region element A[p, k] reads: base + tap, or the zero element past K.
VOXRT_HOST_DEVICE inline int direct_conv_region_index(int zero, int base, int tap) {
  return tap < 0 ? zero : base + tap;
}

// Region element e (< zero()) of the tile whose first output row is oh_first: the input there
// (x_image [channels, height, width]) or 0 outside the image. Consecutive e run along iw.
VOXRT_HOST_DEVICE inline float direct_conv_region_value(const DirectConv& s,
                                                        const DirectConvRegion& g,
                                                        const float* x_image, int oh_first, int e) {
  const int c = e / g.channel_elements(), ij = e - c * g.channel_elements();
  const int i = ij / g.cols, j = ij - i * g.cols;
  const int ih = oh_first * s.stride_h - s.pad_top + i, iw = j - s.pad_left;
  const bool inside = ih >= 0 && ih < s.height && iw >= 0 && iw < s.width;
  return inside ? x_image[(c * s.height + ih) * s.width + iw] : 0.0f;
}

// Byte offsets into the kernel's dynamic shared memory: the filter [k_padded, OC + 8] (operand
// type), then A [64, kDirectConvAStride] with C [OC, kDirectConvCStride] (float) over it, then
// the tap table (`taps` entries: DirectConvTap on the gather path, int on the region path), then
// (region path) the region, 16-byte aligned, zero element included.
struct DirectConvLayout {
  bool region = false;
  int filter_stride = 0, a_offset = 0, taps_offset = 0, taps = 0, region_offset = 0;
  std::int64_t bytes = 0;
};
VOXRT_HOST_DEVICE inline DirectConvLayout direct_conv_layout(const DirectConv& s,
                                                             const DirectConvRegion& g,
                                                             bool region) {
  DirectConvLayout l;
  l.region = region;
  l.filter_stride = s.out_channels + 8;
  l.a_offset = s.k_padded() * l.filter_stride * 2;
  const int a_bytes = kDirectConvTilePositions * kDirectConvAStride * 2;
  const int c_bytes = s.out_channels * kDirectConvCStride * 4;
  l.taps_offset = l.a_offset + (a_bytes > c_bytes ? a_bytes : c_bytes);
  l.taps = (s.k_padded() + kDirectConvChunk - 1) / kDirectConvChunk * kDirectConvChunk;
  const int tap_bytes =
      l.taps * (region ? static_cast<int>(sizeof(int)) : static_cast<int>(sizeof(DirectConvTap)));
  l.region_offset = (l.taps_offset + tap_bytes + 15) / 16 * 16;
  l.bytes = region ? l.region_offset + ((std::int64_t{g.zero(s)} + 1) * 2 + 15) / 16 * 16
                   : std::int64_t{l.taps_offset} + tap_bytes;
  return l;
}

}  // namespace ops

// Shared memory budgets of the region path: it is taken when its layout fits in
// kDirectConvRegionPreferredBytes (two blocks per SM), or when the gather path's layout already
// exceeds that (one block per SM either way) and the region one fits in kDirectConvRegionMaxBytes.
inline constexpr std::int64_t kDirectConvRegionPreferredBytes = 100 * 1024;
inline constexpr std::int64_t kDirectConvRegionMaxBytes = 200 * 1024;

// The region of the largest tile of s (out_rows: the most output rows a 64-position tile spans).
ops::DirectConvRegion direct_conv_region(const ops::DirectConv& s);

// The launch's shared memory layout: the region path's when it fits the budgets above, else the
// gather path's (region == false).
ops::DirectConvLayout direct_conv_plan(const ops::DirectConv& s);

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

// The same through the region path: per tile of 64 positions, the region filled element by
// element (direct_conv_region_value), then A[p, k] = region[direct_conv_region_index(...)] as the
// kernel reads it (dead positions of a partial tile read from base 0 and are dropped).
std::vector<float> direct_conv_region_reference(const ops::DirectConv& s, const float* x,
                                                const std::vector<float>& filter);

}  // namespace voxrt::backends::cuda
