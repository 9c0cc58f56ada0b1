// Conv / FusedConv through 2-D FFTs (tactics "fft", "fft_large_tiles"), for large kernels such
// as DeepSpeech2's 41x11 and 21x11: a direct or im2col convolution costs KH*KW multiply-adds per
// output and input channel pair, the FFT route a few per frequency bin.
//
// Overlap-save over tiles: the transform size along each axis is the power of two at or above
// twice ("fft") or four times ("fft_large_tiles") the kernel, capped by the padded input when
// its dims are static (64 x 32 for a 21x11 kernel with "fft"), and the output is cut into tiles
// of the samples one such window yields without wrap-around. Per image:
//   1. each input channel's window of every tile is transformed; the spectrum is kept for
//      kh in [0, FH/2] (the rest is its Hermitian mirror, the window being real);
//   2. per output channel and tile, Y = sum_c X_c * conj(W_oc,c), whose inverse is the tile's
//      stride-1 cross-correlation; the strided samples (taken by folding the spectrum when the
//      stride divides the size), bias and activation go to the output.
// The weight spectra W_oc,c depend only on the weights and the tile size, so they are computed
// once, when the kernel is made (8.6 MB for DS2's conv.3 with "fft", against 68 MB for one
// transform of the whole 128 x 128 padded plane); the input's spatial dims may change per call.
// Each 2-D transform is two passes of 1-D transforms along the first axis of a row-major plane,
// every row a SIMD vector of independent lanes, with a transpose in between; that keeps every
// inner loop contiguous.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

constexpr std::int64_t kMaxFftSize = 1024;
constexpr std::int64_t kLanes = 8;  // lane counts are padded to this (one AVX register)
constexpr std::size_t kMaxWeightSpectrumBytes = std::size_t{512} << 20;
// Smaller kernels are left to the direct tactics (a judgement, not measured: the autotuner
// would drop a losing fft tactic anyway, at the cost of build time).
constexpr std::int64_t kConvFftMinKernelArea = 25;

std::int64_t next_power_of_two(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
std::int64_t round_up(std::int64_t n, std::int64_t to) {
  return (n + to - 1) / to * to;
}

// The twiddles exp(-2 pi i k / n), k < n / 2, and the bit-reversal permutation of one size.
struct FftSize {
  std::int64_t n = 1;
  std::vector<float> cos_k, sin_k;
  std::vector<std::int64_t> reversed;

  explicit FftSize(std::int64_t size) : n(size) {
    const double pi = std::acos(-1.0);
    for (std::int64_t k = 0; k < n / 2; ++k) {
      cos_k.push_back(static_cast<float>(std::cos(2.0 * pi * static_cast<double>(k) / n)));
      sin_k.push_back(static_cast<float>(-std::sin(2.0 * pi * static_cast<double>(k) / n)));
    }
    int bits = 0;
    while ((std::int64_t{1} << bits) < n) ++bits;
    reversed.resize(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      std::int64_t r = 0;
      for (int b = 0; b < bits; ++b) r |= ((i >> b) & 1) << (bits - 1 - b);
      reversed[static_cast<std::size_t>(i)] = r;
    }
  }
};

// In place along the first axis of [n][stride] planes (re, im): the first m lanes of each row
// are transformed (exp(-...) forward, exp(+...) inverse, unscaled). The whole transform is one
// function per instruction set, so the short rows of small tiles (m = 32 lanes: four AVX
// registers) do not pay a call per butterfly.
#define VOXRT_FFT_FIRST_AXIS_BODY                                                         \
  const std::int64_t n = size.n;                                                          \
  for (std::int64_t i = 0; i < n; ++i) {                                                  \
    const std::int64_t r = size.reversed[static_cast<std::size_t>(i)];                    \
    if (r <= i) continue;                                                                 \
    float* __restrict a_re = re + i * stride;                                             \
    float* __restrict a_im = im + i * stride;                                             \
    float* __restrict b_re = re + r * stride;                                             \
    float* __restrict b_im = im + r * stride;                                             \
    for (std::int64_t j = 0; j < m; ++j) {                                                \
      const float t_re = a_re[j], t_im = a_im[j];                                         \
      a_re[j] = b_re[j];                                                                  \
      a_im[j] = b_im[j];                                                                  \
      b_re[j] = t_re;                                                                     \
      b_im[j] = t_im;                                                                     \
    }                                                                                     \
  }                                                                                       \
  const float sign = inverse ? -1.0f : 1.0f;                                              \
  for (std::int64_t len = 2; len <= n; len <<= 1) {                                       \
    const std::int64_t half = len / 2, step = n / len;                                    \
    for (std::int64_t start = 0; start < n; start += len) {                               \
      for (std::int64_t k = 0; k < half; ++k) {                                           \
        const float wr = size.cos_k[static_cast<std::size_t>(k * step)];                  \
        const float wi = sign * size.sin_k[static_cast<std::size_t>(k * step)];           \
        float* __restrict a_re = re + (start + k) * stride;                               \
        float* __restrict a_im = im + (start + k) * stride;                               \
        float* __restrict b_re = re + (start + k + half) * stride;                        \
        float* __restrict b_im = im + (start + k + half) * stride;                        \
        for (std::int64_t j = 0; j < m; ++j) {                                            \
          const float br = b_re[j] * wr - b_im[j] * wi, bi = b_re[j] * wi + b_im[j] * wr; \
          b_re[j] = a_re[j] - br;                                                         \
          b_im[j] = a_im[j] - bi;                                                         \
          a_re[j] += br;                                                                  \
          a_im[j] += bi;                                                                  \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }

VOXRT_AVX2 void fft_first_axis_avx2(const FftSize& size, float* re, float* im, std::int64_t m,
                                    std::int64_t stride, bool inverse) {
  VOXRT_FFT_FIRST_AXIS_BODY
}
void fft_first_axis_generic(const FftSize& size, float* re, float* im, std::int64_t m,
                            std::int64_t stride, bool inverse) {
  VOXRT_FFT_FIRST_AXIS_BODY
}
#undef VOXRT_FFT_FIRST_AXIS_BODY

void fft_first_axis(const FftSize& size, float* re, float* im, std::int64_t m, std::int64_t stride,
                    bool inverse) {
  if (cpu_has_avx2_fma()) {
    fft_first_axis_avx2(size, re, im, m, stride, inverse);
  } else {
    fft_first_axis_generic(size, re, im, m, stride, inverse);
  }
}

// Spectra are stored channel-interleaved for the products: a group (one tile of the input, or
// one output channel of the weights) is [bins / 8][channel][re, im][8], so the 8-bin slice j of
// every channel is one contiguous run of channels * 64 bytes.
inline std::int64_t interleaved_floats(std::int64_t channels, std::int64_t bins) {
  return channels * 2 * bins;
}
// Writes channel c of a group from a plain half spectrum (re [bins], im [bins]).
void store_interleaved(const float* re, const float* im, std::int64_t bins, std::int64_t channels,
                       std::int64_t c, float* group) {
  for (std::int64_t j = 0; j < bins; j += 8) {
    float* dst = group + ((j / 8) * channels + c) * 16;
    std::memcpy(dst, re + j, 8 * sizeof(float));
    std::memcpy(dst + 8, im + j, 8 * sizeof(float));
  }
}

// The product spectra of up to kOutputBlock output channels, every tile, summed over the input
// channels: acc(o, tile) = sum_c x(tile)[c] * conj(w(o)[c]), written to acc + o * acc_o_stride +
// tile * acc_tile_stride as re [bins] then im [bins]. The sums stay in registers across the
// channels; for each 8-bin slice the block's weight slices (kOutputBlock * channels * 64 bytes)
// stay in L1 while every tile uses them, so the weight spectra are read from memory once.
constexpr std::int64_t kOutputBlock = 4;

struct ProductArgs {
  float* acc;
  std::int64_t acc_o_stride, acc_tile_stride;
  const float* x;  // tile 0's group; tile t at x + t * x_tile_stride
  std::int64_t x_tile_stride;
  const float* w;  // output channel o's group at w + o * w_o_stride
  std::int64_t w_o_stride;
  std::int64_t channels, bins, tiles;
};

template <int kCount>
VOXRT_AVX2 void sum_products_avx2(const ProductArgs& a) {
  const std::int64_t slice = a.channels * 16;
  for (std::int64_t j = 0; j < a.bins; j += 8) {
    const float* wj = a.w + (j / 8) * slice;
    for (std::int64_t tile = 0; tile < a.tiles; ++tile) {
      const float* xj = a.x + tile * a.x_tile_stride + (j / 8) * slice;
      __m256 re[kCount], im[kCount];
      for (int o = 0; o < kCount; ++o) re[o] = im[o] = _mm256_setzero_ps();
      for (std::int64_t c = 0; c < a.channels; ++c) {
        const __m256 xr = _mm256_loadu_ps(xj + c * 16), xi = _mm256_loadu_ps(xj + c * 16 + 8);
        for (int o = 0; o < kCount; ++o) {
          const float* wc = wj + o * a.w_o_stride + c * 16;
          const __m256 wr = _mm256_loadu_ps(wc), wi = _mm256_loadu_ps(wc + 8);
          re[o] = _mm256_fmadd_ps(xr, wr, _mm256_fmadd_ps(xi, wi, re[o]));
          im[o] = _mm256_fmsub_ps(xi, wr, _mm256_fmsub_ps(xr, wi, im[o]));
        }
      }
      for (int o = 0; o < kCount; ++o) {
        float* out = a.acc + o * a.acc_o_stride + tile * a.acc_tile_stride;
        _mm256_storeu_ps(out + j, re[o]);
        _mm256_storeu_ps(out + a.bins + j, im[o]);
      }
    }
  }
}

void sum_products_generic(const ProductArgs& a, int count) {
  const std::int64_t slice = a.channels * 16;
  for (std::int64_t j = 0; j < a.bins; j += 8) {
    for (std::int64_t tile = 0; tile < a.tiles; ++tile) {
      const float* xj = a.x + tile * a.x_tile_stride + (j / 8) * slice;
      for (int o = 0; o < count; ++o) {
        const float* wj = a.w + o * a.w_o_stride + (j / 8) * slice;
        float* out = a.acc + o * a.acc_o_stride + tile * a.acc_tile_stride;
        for (int l = 0; l < 8; ++l) {
          float re = 0.0f, im = 0.0f;
          for (std::int64_t c = 0; c < a.channels; ++c) {
            const float xr = xj[c * 16 + l], xi = xj[c * 16 + 8 + l];
            const float wr = wj[c * 16 + l], wi = wj[c * 16 + 8 + l];
            re += xr * wr + xi * wi;
            im += xi * wr - xr * wi;
          }
          out[j + l] = re;
          out[a.bins + j + l] = im;
        }
      }
    }
  }
}

// bins is a multiple of 8 (fft_w is a power of two >= 8).
void sum_products(const ProductArgs& a, int count) {
  if (!cpu_has_avx2_fma()) {
    sum_products_generic(a, count);
    return;
  }
  switch (count) {
    case 1: sum_products_avx2<1>(a); break;
    case 2: sum_products_avx2<2>(a); break;
    case 3: sum_products_avx2<3>(a); break;
    default: sum_products_avx2<4>(a); break;
  }
}

// dst[j][i] = src[i][j] for i < rows, j < cols (row strides given).
void transpose(const float* src, std::int64_t rows, std::int64_t cols, std::int64_t src_stride,
               float* dst, std::int64_t dst_stride) {
  constexpr std::int64_t kBlock = 16;
  for (std::int64_t i0 = 0; i0 < rows; i0 += kBlock) {
    for (std::int64_t j0 = 0; j0 < cols; j0 += kBlock) {
      const std::int64_t i1 = std::min(rows, i0 + kBlock), j1 = std::min(cols, j0 + kBlock);
      for (std::int64_t i = i0; i < i1; ++i)
        for (std::int64_t j = j0; j < j1; ++j) dst[j * dst_stride + i] = src[i * src_stride + j];
    }
  }
}

// Fixed when the kernel is made, from the weights and attributes alone: the tile transform
// sizes and how many outputs a tile yields. The input's spatial dims (and so the padding of an
// auto_pad node and the tile counts) are taken per call.
struct FftTilePlan {
  std::int64_t in_channels = 0, out_channels = 0, kernel_h = 0, kernel_w = 0;
  std::int64_t stride_h = 1, stride_w = 1;
  std::int64_t fft_h = 0, fft_w = 0;
  std::int64_t half_rows = 0;  // fft_h / 2 + 1
  // Outputs per tile: the strided samples of the tile's valid (unwrapped) correlation.
  std::int64_t tile_out_h = 0, tile_out_w = 0;
  // The strides when they divide the transform sizes (the inverse then runs on the spectrum
  // folded onto fft / fold rows, which yields exactly the strided samples), else 1.
  std::int64_t fold_h = 1, fold_w = 1;
  std::int64_t bins() const { return half_rows * fft_w; }
  std::int64_t lanes_out() const { return std::min(fft_h, round_up(tile_out_h, kLanes)); }
};

// Per-thread buffers of one transform (thread_scratch slots 1 to 3; slot 0 holds the input
// spectra that every thread reads).
struct Work {
  float* plane_re;  // [fft_h][fft_w]
  float* plane_im;
  float* narrow_re;  // [fft_w][lanes], lanes <= fft_h
  float* narrow_im;
  float* acc;  // kOutputBlock accumulators of [tiles][2][bins]
};

Work thread_work(const FftTilePlan& p, std::int64_t tiles) {
  const auto plane = static_cast<std::size_t>(p.fft_h * p.fft_w);
  float* a = thread_scratch_floats(2 * plane, 1);
  float* b = thread_scratch_floats(2 * plane, 2);
  float* c =
      thread_scratch_floats(static_cast<std::size_t>(kOutputBlock * tiles * 2 * p.bins()), 3);
  return {a, a + plane, b, b + plane, c};
}

// The half spectrum of the fft_h x fft_w window of a real plane src [src_h][src_w] whose corner
// is at (y0, x0) in src's coordinates (negative: the window starts in the padding); samples
// outside src are zeros. The result is the first bins() values of work.plane_re / plane_im.
void forward_spectrum(const FftTilePlan& p, const FftSize& size_h, const FftSize& size_w,
                      const float* src, std::int64_t src_h, std::int64_t src_w, std::int64_t y0,
                      std::int64_t x0, const Work& work) {
  const std::int64_t h_begin = std::max<std::int64_t>(0, y0);
  const std::int64_t h_end = std::min(src_h, y0 + p.fft_h);
  const std::int64_t w_begin = std::max<std::int64_t>(0, x0);
  const std::int64_t w_end = std::min(src_w, x0 + p.fft_w);
  const std::int64_t lanes =
      h_end > h_begin ? std::min(p.fft_h, round_up(h_end - y0, kLanes)) : kLanes;
  // 1. Transposed: narrow[w][h] = window(h, w), h < lanes; then the transform along w.
  std::fill(work.narrow_re, work.narrow_re + p.fft_w * lanes, 0.0f);
  std::fill(work.narrow_im, work.narrow_im + p.fft_w * lanes, 0.0f);
  for (std::int64_t h = h_begin; h < h_end; ++h)
    for (std::int64_t w = w_begin; w < w_end; ++w)
      work.narrow_re[(w - x0) * lanes + (h - y0)] = src[h * src_w + w];
  fft_first_axis(size_w, work.narrow_re, work.narrow_im, lanes, lanes, false);
  // 2. Back to [h][kw] (rows past `lanes` are zero), then the transform along h.
  const std::int64_t rows = std::min(lanes, p.fft_h);
  std::fill(work.plane_re + rows * p.fft_w, work.plane_re + p.fft_h * p.fft_w, 0.0f);
  std::fill(work.plane_im + rows * p.fft_w, work.plane_im + p.fft_h * p.fft_w, 0.0f);
  transpose(work.narrow_re, p.fft_w, rows, lanes, work.plane_re, p.fft_w);
  transpose(work.narrow_im, p.fft_w, rows, lanes, work.plane_im, p.fft_w);
  fft_first_axis(size_h, work.plane_re, work.plane_im, p.fft_w, p.fft_w, false);
}

class ConvFftKernel final : public Kernel {
 public:
  ConvFftKernel(ir::Node node, Activation activation, FftTilePlan plan, std::vector<float> w)
      : node_(std::move(node)),
        activation_(activation),
        plan_(plan),
        size_h_(plan.fft_h),
        size_w_(plan.fft_w),
        size_h_fold_(plan.fft_h / plan.fold_h),
        size_w_fold_(plan.fft_w / plan.fold_w),
        w_(std::move(w)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const FftTilePlan& p = plan_;
    const Tensor& x = *inputs[0];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry g,
                           ir::resolve_conv_geometry(node_, x.dims(), inputs[1]->dims()));
    if (g.input.size() != 2 || g.in_channels != p.in_channels)
      return invalid_argument(node_.describe(), ": fft Conv expects X [N, ", p.in_channels,
                              ", H, W], got ", dims_to_string(x.dims()));
    const std::int64_t in_h = g.input[0], in_w = g.input[1];
    const std::int64_t out_h = g.output[0], out_w = g.output[1];
    if (out_h <= 0 || out_w <= 0) return Status::ok();
    const std::int64_t tiles_h = (out_h + p.tile_out_h - 1) / p.tile_out_h;
    const std::int64_t tiles_w = (out_w + p.tile_out_w - 1) / p.tile_out_w;
    const std::int64_t tiles = tiles_h * tiles_w;
    const std::int64_t bins = p.bins();
    const std::int64_t in_plane = in_h * in_w, out_plane = out_h * out_w;
    // Input spectra, one channel-interleaved group per tile.
    float* spectra =
        thread_scratch_floats(static_cast<std::size_t>(p.in_channels * tiles * 2 * bins), 0);
    const float* bd = bias ? bias->data<float>() : nullptr;
    const float scale = 1.0f / static_cast<float>(p.fft_h * p.fft_w);
    const std::int64_t blocks = (p.out_channels + kOutputBlock - 1) / kOutputBlock;
    for (std::int64_t n = 0; n < g.batch; ++n) {
      const float* image = x.data<float>() + n * p.in_channels * in_plane;
      float* y_image = outputs[0]->data<float>() + n * p.out_channels * out_plane;
      context.pool->parallel_for(
          p.in_channels * tiles, 1, [&](std::int64_t begin, std::int64_t end) {
            const Work work = thread_work(p, tiles);
            for (std::int64_t unit = begin; unit < end; ++unit) {
              const std::int64_t c = unit / tiles, tile = unit % tiles;
              const std::int64_t y0 =
                  (tile / tiles_w) * p.tile_out_h * p.stride_h - g.pads_begin[0];
              const std::int64_t x0 =
                  (tile % tiles_w) * p.tile_out_w * p.stride_w - g.pads_begin[1];
              forward_spectrum(p, size_h_, size_w_, image + c * in_plane, in_h, in_w, y0, x0, work);
              store_interleaved(work.plane_re, work.plane_im, bins, p.in_channels, c,
                                spectra + tile * interleaved_floats(p.in_channels, bins));
            }
          });
      context.pool->parallel_for(blocks, 1, [&](std::int64_t begin, std::int64_t end) {
        const Work work = thread_work(p, tiles);
        for (std::int64_t block = begin; block < end; ++block) {
          const std::int64_t oc0 = block * kOutputBlock;
          const std::int64_t count = std::min(kOutputBlock, p.out_channels - oc0);
          ProductArgs args;
          args.acc = work.acc;
          args.acc_o_stride = tiles * 2 * bins;
          args.acc_tile_stride = 2 * bins;
          args.x = spectra;
          args.x_tile_stride = interleaved_floats(p.in_channels, bins);
          args.w = w_.data() + oc0 * interleaved_floats(p.in_channels, bins);
          args.w_o_stride = interleaved_floats(p.in_channels, bins);
          args.channels = p.in_channels;
          args.bins = bins;
          args.tiles = tiles;
          sum_products(args, static_cast<int>(count));
          for (std::int64_t o = 0; o < count; ++o) {
            for (std::int64_t tile = 0; tile < tiles; ++tile) {
              const float* acc = work.acc + (o * tiles + tile) * 2 * bins;
              inverse_to_output(work, acc, acc + bins, bd ? bd[oc0 + o] : 0.0f, scale,
                                (tile / tiles_w) * p.tile_out_h, (tile % tiles_w) * p.tile_out_w,
                                out_h, out_w, y_image + (oc0 + o) * out_plane);
            }
          }
        }
      });
    }
    return Status::ok();
  }

 private:
  // One tile's product spectrum (a half spectrum) -> the strided samples of its inverse
  // transform, plus bias, then the activation, into the outputs y [out_h][out_w] the tile
  // covers (from row oh0, column ow0).
  void inverse_to_output(const Work& work, const float* acc_re, const float* acc_im, float bias,
                         float scale, std::int64_t oh0, std::int64_t ow0, std::int64_t out_h,
                         std::int64_t out_w, float* y) const {
    const FftTilePlan& p = plan_;
    // 1. Only every stride-th sample of the inverse is wanted, and those samples of an N-point
    // inverse are the (N / s)-point inverse of the spectrum folded onto its first N / s rows:
    // y[s m] = sum_{k < N/s} (sum_q V[k + q N / s]) e^{2 pi i k m / (N / s)}. So the rows of the
    // full spectrum (rows past the stored half from its Hermitian mirror, V(kh, kw) =
    // conj(V(FH - kh, -kw))) are summed into fft_h / fold_h rows.
    const std::int64_t rows_h = p.fft_h / p.fold_h;
    for (std::int64_t k = 0; k < rows_h; ++k) {
      float* dst_re = work.plane_re + k * p.fft_w;
      float* dst_im = work.plane_im + k * p.fft_w;
      for (std::int64_t q = 0; q < p.fold_h; ++q) {
        const std::int64_t kh = k + q * rows_h;
        const bool first = q == 0;
        if (kh < p.half_rows) {
          const float* src_re = acc_re + kh * p.fft_w;
          const float* src_im = acc_im + kh * p.fft_w;
          for (std::int64_t kw = 0; kw < p.fft_w; ++kw) {
            dst_re[kw] = first ? src_re[kw] : dst_re[kw] + src_re[kw];
            dst_im[kw] = first ? src_im[kw] : dst_im[kw] + src_im[kw];
          }
        } else {
          const float* src_re = acc_re + (p.fft_h - kh) * p.fft_w;
          const float* src_im = acc_im + (p.fft_h - kh) * p.fft_w;
          for (std::int64_t kw = 0; kw < p.fft_w; ++kw) {
            const std::int64_t mirror = kw == 0 ? 0 : p.fft_w - kw;
            dst_re[kw] = first ? src_re[mirror] : dst_re[kw] + src_re[mirror];
            dst_im[kw] = first ? -src_im[mirror] : dst_im[kw] - src_im[mirror];
          }
        }
      }
    }
    // 2. Inverse along h: the tile's output row r is row r * (stride / fold), i.e. r when
    // folded. 3. Those rows transposed, folded along w the same way, inverse along w.
    fft_first_axis(size_h_fold_, work.plane_re, work.plane_im, p.fft_w, p.fft_w, true);
    const std::int64_t rows = std::min(p.tile_out_h, out_h - oh0);
    const std::int64_t cols = std::min(p.tile_out_w, out_w - ow0);
    const std::int64_t lanes = p.lanes_out();
    const std::int64_t rows_w = p.fft_w / p.fold_w;
    // Each wanted row folded along w in place (its first rows_w values), then the rows_w x rows
    // block transposed into narrow [rows_w][lanes] (lanes past `rows` zero).
    const std::int64_t row_step = p.stride_h / p.fold_h;
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row_re = work.plane_re + r * row_step * p.fft_w;
      float* row_im = work.plane_im + r * row_step * p.fft_w;
      for (std::int64_t q = 1; q < p.fold_w; ++q) {
        for (std::int64_t k = 0; k < rows_w; ++k) {
          row_re[k] += row_re[q * rows_w + k];
          row_im[k] += row_im[q * rows_w + k];
        }
      }
    }
    std::fill(work.narrow_re, work.narrow_re + rows_w * lanes, 0.0f);
    std::fill(work.narrow_im, work.narrow_im + rows_w * lanes, 0.0f);
    transpose(work.plane_re, rows, rows_w, row_step * p.fft_w, work.narrow_re, lanes);
    transpose(work.plane_im, rows, rows_w, row_step * p.fft_w, work.narrow_im, lanes);
    fft_first_axis(size_w_fold_, work.narrow_re, work.narrow_im, lanes, lanes, true);
    const std::int64_t sample_w = p.stride_w / p.fold_w;
    for (std::int64_t r = 0; r < rows; ++r) {
      float* row = y + (oh0 + r) * out_w + ow0;
      for (std::int64_t q = 0; q < cols; ++q)
        row[q] = work.narrow_re[q * sample_w * lanes + r] * scale + bias;
      apply_activation(activation_, row, cols);
    }
  }

  ir::Node node_;
  Activation activation_;
  FftTilePlan plan_;
  FftSize size_h_, size_w_;            // forward transforms
  FftSize size_h_fold_, size_w_fold_;  // inverse transforms of the folded spectra
  std::vector<float> w_;               // one channel-interleaved group per output channel
};

// The transform size along one axis: the power of two at or above `factor` times the kernel
// (factor 2: at least half of each tile's correlation is valid output; larger tiles waste less
// on the overlap but make bigger weight spectra), at least kLanes, and no larger than the padded
// input when that is known at build time (`span`, or -1).
std::int64_t tile_size(std::int64_t kernel, int factor, std::int64_t span) {
  std::int64_t size = std::max(kLanes, next_power_of_two(factor * kernel));
  if (span > 0) size = std::min(size, std::max(kLanes, next_power_of_two(span)));
  return size;
}

// The plan, or why this node is not one for the FFT tactic.
Expected<FftTilePlan> plan_fft_conv(const ir::Node& node, int tile_factor) {
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant() || w->constant->dims().size() != 4)
    return unsupported("fft Conv: needs constant 2-D weights");
  const Dims& wd = w->constant->dims();
  const std::int64_t group = node.attrs.get_int("group", 1);
  const auto dilations = node.attrs.get_ints("dilations", {1, 1});
  const auto strides = node.attrs.get_ints("strides", {1, 1});
  if (group != 1 || dilations.size() != 2 || dilations[0] != 1 || dilations[1] != 1)
    return unsupported("fft Conv: group 1 and dilation 1 only");
  if (strides.size() != 2 || strides[0] < 1 || strides[1] < 1)
    return unsupported("fft Conv: two positive strides");
  FftTilePlan p;
  p.out_channels = wd[0];
  p.in_channels = wd[1];
  p.kernel_h = wd[2];
  p.kernel_w = wd[3];
  p.stride_h = strides[0];
  p.stride_w = strides[1];
  if (p.out_channels <= 0 || p.in_channels <= 0 || p.kernel_h <= 0 || p.kernel_w <= 0)
    return unsupported("fft Conv: empty weights");
  // The padded extent the outputs read, when X's spatial dims are static.
  std::int64_t span_h = -1, span_w = -1;
  const ir::Value* x = node.input(0);
  if (x && x->rank_known && x->shape.size() == 4 && x->shape[2].is_known() &&
      x->shape[3].is_known()) {
    auto g = ir::resolve_conv_geometry(
        node, {1, p.in_channels, x->shape[2].value, x->shape[3].value}, wd);
    if (g && g->output.size() == 2) {
      span_h =
          std::max((g->output[0] - 1) * p.stride_h + p.kernel_h, g->pads_begin[0] + g->input[0]);
      span_w =
          std::max((g->output[1] - 1) * p.stride_w + p.kernel_w, g->pads_begin[1] + g->input[1]);
    }
  }
  p.fft_h = tile_size(p.kernel_h, tile_factor, span_h);
  p.fft_w = tile_size(p.kernel_w, tile_factor, span_w);
  // A stride longer than the tile's spare length would leave a tile one output.
  p.tile_out_h = (p.fft_h - p.kernel_h) / p.stride_h + 1;
  p.tile_out_w = (p.fft_w - p.kernel_w) / p.stride_w + 1;
  p.half_rows = p.fft_h / 2 + 1;
  if (p.fft_h % p.stride_h == 0) p.fold_h = p.stride_h;
  if (p.fft_w % p.stride_w == 0) p.fold_w = p.stride_w;
  if (p.fft_h > kMaxFftSize || p.fft_w > kMaxFftSize)
    return unsupported("fft Conv: a ", p.fft_h, "x", p.fft_w, " transform is over the ",
                       kMaxFftSize, " limit");
  const auto spectrum_bytes = static_cast<std::size_t>(p.in_channels * p.out_channels) *
                              static_cast<std::size_t>(p.bins()) * 2 * sizeof(float);
  if (spectrum_bytes > kMaxWeightSpectrumBytes)
    return unsupported("fft Conv: the weight spectra would take ", spectrum_bytes >> 20, " MiB");
  return p;
}

}  // namespace

bool conv_fft_applies(const ir::Node& node, int tile_factor) {
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant() || w->constant->dims().size() != 4) return false;
  if (x && x->rank_known && x->shape.size() != 4) return false;
  const Dims& wd = w->constant->dims();
  if (wd[2] * wd[3] < kConvFftMinKernelArea) return false;
  return plan_fft_conv(node, tile_factor).has_value();
}

Expected<std::unique_ptr<Kernel>> make_conv_fft_kernel(const ir::Node& node, int tile_factor) {
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  VOXRT_ASSIGN_OR_RETURN(FftTilePlan p, plan_fft_conv(node, tile_factor));
  const std::int64_t bins = p.bins();
  const auto planes = static_cast<std::size_t>(p.out_channels * p.in_channels);
  std::vector<float> w(planes * 2 * static_cast<std::size_t>(bins));
  const FftSize size_h(p.fft_h), size_w(p.fft_w);
  const float* wd = node.input(1)->constant->data<float>();
  const std::int64_t taps = p.kernel_h * p.kernel_w;
  // The calling thread does the weight planes alone: this runs once per kernel.
  const Work work = thread_work(p, 0);
  for (std::int64_t oc = 0; oc < p.out_channels; ++oc) {
    for (std::int64_t c = 0; c < p.in_channels; ++c) {
      forward_spectrum(p, size_h, size_w, wd + (oc * p.in_channels + c) * taps, p.kernel_h,
                       p.kernel_w, 0, 0, work);
      store_interleaved(work.plane_re, work.plane_im, bins, p.in_channels, c,
                        w.data() + oc * interleaved_floats(p.in_channels, bins));
    }
  }
  return std::unique_ptr<Kernel>(
      new ConvFftKernel(detached_node(node), activation, p, std::move(w)));
}

}  // namespace voxrt::backends::cpu::dense
