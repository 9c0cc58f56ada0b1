// The width-fold convolution tactics (kConvWidthFold*): a 2-D convolution over a narrow input
// (DS2's streaming chunk is 8 or 16 columns wide) rewritten as a convolution over the height
// alone, run by cuDNN's NHWC tensor-core kernels (FP16/BF16) or, unfolded along the height, as
// one cuBLASLt GEMM (every precision):
//   - the output columns are cut into tiles of tile_w; tile t of image n becomes image
//     n * tiles + t of the folded convolution;
//   - the input columns a tile reads (its window, `window` wide) become channels: folded channel
//     c * window + ws holds x[n, c, h, window_start + t * tile_w * stride_w + ws] (0 outside);
//   - output channel oc * tile_w + tw of the folded convolution is y[n, oc, oh, t * tile_w + tw];
//   - the folded filter [OC * tile_w, KH, 1, C * window] (KRSC) holds w[oc, c, r, kw] where the
//     window column ws is output column tw's tap kw, zeros elsewhere (a Toeplitz band).
// DS2's conv.3 on a chunk (32 -> 32 channels, kernel 21 x 11, 8 columns) becomes a 256 -> 256
// channel convolution with a 21 x 1 kernel: a dense, aligned GEMM shape instead of 32 output
// channels over a 7,392-long reduction. A single tile (all output columns) drops the window
// columns that lie in the padding, so nothing is computed for them; several tiles keep them
// (zeros) and the folded convolution does (window * tiles * tile_w) / (KW * OW) times the
// multiply-adds of the original (width_fold_work_ratio).
// Plain C++17 and no CUDA headers, so the .cu kernels (cuda_ops.h), the host side and CPU-only
// unit tests share the index maps below.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cuda/host_device.h"

namespace voxrt::backends::cuda {
namespace ops {

// Division by a run-time constant as a multiply and a shift (Granlund and Montgomery): for
// 0 <= x < 2^31 and 1 <= d < 2^31, x / d == (x * multiplier) >> shift with shift = 31 +
// ceil(log2 d) and multiplier = ceil(2^shift / d) (< 2^32). The fold kernels split every element
// index into several coordinates, and a 32-bit integer division costs ~20 instructions.
struct FastDivisor {
  int divisor = 1;
  unsigned multiplier = 1u << 31;
  int shift = 31;
  VOXRT_HOST_DEVICE int div(int x) const {
    return static_cast<int>(
        (static_cast<unsigned long long>(static_cast<unsigned>(x)) * multiplier) >> shift);
  }
  VOXRT_HOST_DEVICE int mod(int x) const { return x - div(x) * divisor; }
};

// The convolution (x [batch, channels, height, width] -> y [batch, out_channels, out_h, out_w])
// and its fold, made by width_fold_plan (which also sets the divisors). 32-bit: the caller checks
// width_fold_applies().
struct WidthFold {
  int batch = 0, channels = 0, height = 0, width = 0;
  int out_channels = 0, kernel_h = 1, kernel_w = 1, out_h = 0, out_w = 0;
  int stride_h = 1, stride_w = 1, pad_top = 0, pad_bottom = 0, pad_left = 0, dilation_h = 1,
      dilation_w = 1;
  int tile_w = 0;  // output columns per tile
  int tiles = 0;   // ceil(out_w / tile_w)
  int window = 0;  // input columns per tile: the folded channels are channels * window
  // Input column of tile 0's first window column (tile t: + t * tile_w * stride_w).
  int window_start = 0;
  // Divisors of the index maps below (by_chunks8 / by_chunks4: folded_channels / 8 and / 4).
  FastDivisor by_folded_channels, by_height, by_tiles, by_window, by_out_w, by_out_h,
      by_out_channels, by_tile_w, by_kernel_h, by_plane, by_chunks8, by_chunks4;
  VOXRT_HOST_DEVICE int folded_batch() const { return batch * tiles; }
  VOXRT_HOST_DEVICE int folded_channels() const { return channels * window; }
  VOXRT_HOST_DEVICE int folded_out_channels() const { return out_channels * tile_w; }
  // Elements of the folded input [folded_batch, height, 1, folded_channels] (NHWC) and output
  // [folded_batch, out_h, 1, folded_out_channels].
  VOXRT_HOST_DEVICE std::int64_t folded_input_elements() const {
    return std::int64_t{folded_batch()} * height * folded_channels();
  }
  VOXRT_HOST_DEVICE std::int64_t folded_output_elements() const {
    return std::int64_t{folded_batch()} * out_h * folded_out_channels();
  }
  VOXRT_HOST_DEVICE std::int64_t output_elements() const {
    return std::int64_t{batch} * out_channels * out_h * out_w;
  }
  // The GEMM tactics' matrix A [folded_batch * out_h, kernel_h * folded_channels]
  // (width_fold_row_chunk_source).
  VOXRT_HOST_DEVICE std::int64_t unfolded_rows() const {
    return std::int64_t{folded_batch()} * out_h;
  }
  VOXRT_HOST_DEVICE std::int64_t unfolded_columns() const {
    return std::int64_t{kernel_h} * folded_channels();
  }
};

// Folded input element e (NHWC order: image, row, channel) from x (float NCHW).
VOXRT_HOST_DEVICE inline float width_fold_input_value(const WidthFold& f, const float* x, int e) {
  const int row = f.by_folded_channels.div(e);  // folded image * height + h
  const int channel = e - row * f.folded_channels();
  const int image = f.by_height.div(row);
  const int h = row - image * f.height;
  const int n = f.by_tiles.div(image), t = image - n * f.tiles;
  const int c = f.by_window.div(channel), ws = channel - c * f.window;
  const int iw = f.window_start + t * f.tile_w * f.stride_w + ws;
  if (iw < 0 || iw >= f.width) return 0.0f;
  return x[((n * f.channels + c) * f.height + h) * f.width + iw];
}

// Where output element e of y (NCHW order) lies in the folded output.
VOXRT_HOST_DEVICE inline int width_fold_output_source(const WidthFold& f, int e) {
  const int rest = f.by_out_w.div(e);
  const int ow = e - rest * f.out_w;
  const int n_oc = f.by_out_h.div(rest);
  const int oh = rest - n_oc * f.out_h;
  const int n = f.by_out_channels.div(n_oc), oc = n_oc - n * f.out_channels;
  const int t = f.by_tile_w.div(ow), tw = ow - t * f.tile_w;
  return ((n * f.tiles + t) * f.out_h + oh) * f.folded_out_channels() + oc * f.tile_w + tw;
}

// The GEMM tactics unfold the folded input along the height: row (image, oh) of A is the folded
// input rows h = oh * stride_h - pad_top + r * dilation_h for r < kernel_h, one after the other
// (zeros where h is outside the image), so that the folded convolution is A x filter^T with the
// filter [OC * tile_w, kernel_h * folded_channels]. A is copied in 16-byte chunks of
// chunk_elements (8 two-byte or 4 four-byte elements; folded_channels is a multiple of 8): the
// chunk of the folded input that chunk q of A copies, or -1 for zeros.
VOXRT_HOST_DEVICE inline int width_fold_row_chunk_source(const WidthFold& f, int q,
                                                         int chunk_elements) {
  const FastDivisor& by_chunks = chunk_elements == 8 ? f.by_chunks8 : f.by_chunks4;
  const int chunks = by_chunks.divisor;
  const int rest = by_chunks.div(q);
  const int chunk = q - rest * chunks;
  const int row = f.by_kernel_h.div(rest), r = rest - row * f.kernel_h;
  const int image = f.by_out_h.div(row), oh = row - image * f.out_h;
  const int h = oh * f.stride_h - f.pad_top + r * f.dilation_h;
  if (h < 0 || h >= f.height) return -1;
  return (image * f.height + h) * chunks + chunk;
}

// The kernel column output column tw (of any tile) takes from window column ws, or -1.
VOXRT_HOST_DEVICE inline int width_fold_kernel_column(const WidthFold& f, int tw, int ws) {
  const int offset = ws + f.window_start + f.pad_left - tw * f.stride_w;  // = kw * dilation_w
  if (offset < 0 || offset % f.dilation_w != 0) return -1;
  const int kw = offset / f.dilation_w;
  return kw < f.kernel_w ? kw : -1;
}

}  // namespace ops

// d in [1, 2^31): the FastDivisor of d.
ops::FastDivisor make_fast_divisor(int d);

// The convolution a width-fold tactic is planned for (pads: top, left, bottom, right).
struct WidthFoldConv {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 1, kernel_w = 1, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0,
               dilation_h = 1, dilation_w = 1;
};

// The tile widths the tactics ask for (ids in cuda_common.h): kWidthFoldTileWidths[i] is that of
// kConvWidthFoldFirst + i (cuDNN) and kConvWidthFoldGemmFirst + i (cuBLASLt);
// kConvWidthFoldPrecomp and kConvWidthFoldGemmSecond take the first width.
inline constexpr int kWidthFoldTileWidths[] = {8, 4, 16};
// Limits: the folded convolution's channels, its filter (elements), and how much more work it
// may do than the original.
inline constexpr std::int64_t kWidthFoldMaxChannels = 4096;
inline constexpr std::int64_t kWidthFoldMaxFilterElements = std::int64_t{1} << 26;
inline constexpr double kWidthFoldMaxWorkRatio = 4.0;

// The fold of c with tiles of min(tile_w, out_w) columns: a single tile covers the in-image
// columns its outputs read, several tiles each cover their whole window. The window is widened
// until the folded channels are a multiple of 8 (the tensor-core kernels' alignment; an extra
// column is either past the image, where the input is zero, or past every output's kernel, where
// the filter is). tiles == 0 when c has no output columns.
ops::WidthFold width_fold_plan(const WidthFoldConv& c, int tile_w);

// Multiply-adds of the folded convolution over those of c.
double width_fold_work_ratio(const ops::WidthFold& f);

// Whether the fold with tile_w suits c: symmetric height pads (cuDNN's), the limits above, and
// 32-bit indices for x, y and the folded tensors; for the GEMM tactics (gemm_element_bytes > 0:
// the size of A's elements) also at most kWidthFoldMaxUnfoldedBytes of A.
bool width_fold_applies(const WidthFoldConv& c, int tile_w, int gemm_element_bytes = 0);
inline constexpr std::int64_t kWidthFoldMaxUnfoldedBytes = std::int64_t{1} << 30;

// Whether tile width tile_w plans a different fold for c than every earlier entry of
// kWidthFoldTileWidths (so that no two tactics run the same thing).
bool width_fold_tile_is_new(const WidthFoldConv& c, int tile_w);

// w [OC, C, KH, KW] -> the folded filter [OC * tile_w, KH, 1, C * window] (KRSC).
std::vector<float> width_fold_filter(const ops::WidthFold& f, const float* w);

// y through the fold on the host: the folded input (width_fold_input_value), a direct NHWC
// convolution over the height with the folded filter (double accumulation), then each y element
// from width_fold_output_source. The test oracle of the index maps; bias and activation are left
// out.
std::vector<float> width_fold_reference(const ops::WidthFold& f, const float* x, const float* w);

// The same through the GEMM tactics' maps: A copied chunk by chunk
// (width_fold_row_chunk_source with chunk_elements) from the folded input, times the folded
// filter.
std::vector<float> width_fold_gemm_reference(const ops::WidthFold& f, const float* x,
                                             const float* w, int chunk_elements);

}  // namespace voxrt::backends::cuda
