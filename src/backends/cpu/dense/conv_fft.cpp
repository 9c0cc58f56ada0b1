// Conv / FusedConv through 2-D FFTs (tactic "fft"), for large kernels such as DeepSpeech2's
// 41x11 and 21x11: a direct or im2col convolution costs KH*KW multiply-adds per output and
// input channel pair, the FFT route a few per frequency bin, so conv.3 of DS2 (1.9 GFLOP
// direct) becomes ~0.13 GFLOP of transforms and spectrum products.
//
// Per image, with the padded input plane (Hp x Wp) inside an FH x FW power-of-two transform:
//   1. every input channel's spectrum X_c, kept for kh in [0, FH/2] (the rest is its Hermitian
//      mirror, the plane being real);
//   2. per output channel, Y = sum_c X_c * conj(W_oc,c), whose inverse transform is the
//      stride-1 cross-correlation of the padded input with the kernel; the output takes its
//      strided samples, then bias and activation. FH >= Hp and FW >= Wp, so the circular
//      correlation never wraps into the samples taken.
// The weight spectra W_oc,c are computed once, when the kernel is made, so the input's spatial
// dims must be static (the batch may vary). Each 2-D transform is two passes of 1-D transforms
// along the first axis of a row-major plane, every row a SIMD vector of independent lanes, with
// a transpose in between; that keeps every inner loop contiguous.
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>

#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

constexpr std::int64_t kMaxFftSize = 1024;
constexpr std::int64_t kLanes = 8;  // lane counts are padded to this (one AVX register)
constexpr std::size_t kMaxWeightSpectrumBytes = std::size_t{512} << 20;
// Below ~25 taps the FFT's per-bin work does not pay for itself against a direct product.
constexpr std::int64_t kConvFftMinKernelArea = 25;

std::int64_t next_power_of_two(std::int64_t n) {
  std::int64_t p = 1;
  while (p < n) p <<= 1;
  return p;
}
std::int64_t round_up(std::int64_t n, std::int64_t to) {
  return (n + to - 1) / to * to;
}

// One radix-2 stage's butterflies on rows a and b (m lanes each): (a, b) <- (a + w b, a - w b).
#define VOXRT_FFT_BUTTERFLY_BODY                                                    \
  for (std::int64_t j = 0; j < m; ++j) {                                            \
    const float br = b_re[j] * wr - b_im[j] * wi, bi = b_re[j] * wi + b_im[j] * wr; \
    b_re[j] = a_re[j] - br;                                                         \
    b_im[j] = a_im[j] - bi;                                                         \
    a_re[j] += br;                                                                  \
    a_im[j] += bi;                                                                  \
  }
// acc += x * conj(w), elementwise over n bins.
#define VOXRT_FFT_ACCUMULATE_BODY                       \
  for (std::int64_t j = 0; j < n; ++j) {                \
    acc_re[j] += x_re[j] * w_re[j] + x_im[j] * w_im[j]; \
    acc_im[j] += x_im[j] * w_re[j] - x_re[j] * w_im[j]; \
  }

__attribute__((target("avx2,fma"))) void butterfly_avx2(float* __restrict a_re,
                                                        float* __restrict a_im,
                                                        float* __restrict b_re,
                                                        float* __restrict b_im, std::int64_t m,
                                                        float wr, float wi) {
  VOXRT_FFT_BUTTERFLY_BODY
}
void butterfly_generic(float* __restrict a_re, float* __restrict a_im, float* __restrict b_re,
                       float* __restrict b_im, std::int64_t m, float wr, float wi) {
  VOXRT_FFT_BUTTERFLY_BODY
}
__attribute__((target("avx2,fma"))) void accumulate_avx2(
    float* __restrict acc_re, float* __restrict acc_im, const float* __restrict x_re,
    const float* __restrict x_im, const float* __restrict w_re, const float* __restrict w_im,
    std::int64_t n) {
  VOXRT_FFT_ACCUMULATE_BODY
}
void accumulate_generic(float* __restrict acc_re, float* __restrict acc_im,
                        const float* __restrict x_re, const float* __restrict x_im,
                        const float* __restrict w_re, const float* __restrict w_im,
                        std::int64_t n) {
  VOXRT_FFT_ACCUMULATE_BODY
}
#undef VOXRT_FFT_BUTTERFLY_BODY
#undef VOXRT_FFT_ACCUMULATE_BODY

bool has_avx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return avx2;
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
// are transformed (exp(-...) forward, exp(+...) inverse, unscaled).
void fft_first_axis(const FftSize& size, float* re, float* im, std::int64_t m, std::int64_t stride,
                    bool inverse) {
  const std::int64_t n = size.n;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t r = size.reversed[static_cast<std::size_t>(i)];
    if (r <= i) continue;
    std::swap_ranges(re + i * stride, re + i * stride + m, re + r * stride);
    std::swap_ranges(im + i * stride, im + i * stride + m, im + r * stride);
  }
  const bool avx2 = has_avx2();
  for (std::int64_t len = 2; len <= n; len <<= 1) {
    const std::int64_t half = len / 2, step = n / len;
    for (std::int64_t start = 0; start < n; start += len) {
      for (std::int64_t k = 0; k < half; ++k) {
        const float wr = size.cos_k[static_cast<std::size_t>(k * step)];
        const float wi = inverse ? -size.sin_k[static_cast<std::size_t>(k * step)]
                                 : size.sin_k[static_cast<std::size_t>(k * step)];
        const std::int64_t a = (start + k) * stride, b = (start + k + half) * stride;
        if (avx2) {
          butterfly_avx2(re + a, im + a, re + b, im + b, m, wr, wi);
        } else {
          butterfly_generic(re + a, im + a, re + b, im + b, m, wr, wi);
        }
      }
    }
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

// Everything fixed when the kernel is made: the geometry at the node's static spatial dims,
// the transform sizes and the weight spectra.
struct FftConvPlan {
  std::int64_t in_channels = 0, out_channels = 0;
  std::int64_t in_h = 0, in_w = 0, kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0;
  std::int64_t fft_h = 0, fft_w = 0;
  std::int64_t half_rows = 0;  // fft_h / 2 + 1
  // The strides when they divide the transform sizes (the inverse then runs on the spectrum
  // folded onto fft / fold rows, which yields exactly the strided samples), else 1.
  std::int64_t fold_h = 1, fold_w = 1;
  std::int64_t bins() const { return half_rows * fft_w; }
  std::int64_t lanes_out() const { return std::min(fft_h, round_up(out_h, kLanes)); }
};

// Per-thread buffers of one transform (thread_scratch slots 1 to 3; slot 0 holds the input
// spectra that every thread reads).
struct Work {
  float* plane_re;  // [fft_h][fft_w]
  float* plane_im;
  float* narrow_re;  // [fft_w][lanes], lanes <= fft_h
  float* narrow_im;
  float* acc_re;  // [bins]
  float* acc_im;
};

Work thread_work(const FftConvPlan& p) {
  const auto plane = static_cast<std::size_t>(p.fft_h * p.fft_w);
  const auto narrow = plane;  // the weights' lanes can exceed the input's (large padding)
  const auto bins = static_cast<std::size_t>(p.bins());
  float* a = thread_scratch_floats(2 * plane, 1);
  float* b = thread_scratch_floats(2 * narrow, 2);
  float* c = thread_scratch_floats(2 * bins, 3);
  return {a, a + plane, b, b + narrow, c, c + bins};
}

// The half spectrum ([half_rows][fft_w], re and im) of a real plane src [src_h][src_w] placed at
// (off_h, off_w) in an otherwise zero fft_h x fft_w plane.
void forward_spectrum(const FftConvPlan& p, const FftSize& size_h, const FftSize& size_w,
                      const float* src, std::int64_t src_h, std::int64_t src_w, std::int64_t off_h,
                      std::int64_t off_w, const Work& work, float* out_re, float* out_im) {
  const std::int64_t lanes = std::min(p.fft_h, round_up(off_h + src_h, kLanes));
  // 1. Transposed: narrow[w][h] = plane(h, w), h < lanes; then the transform along w.
  std::fill(work.narrow_re, work.narrow_re + p.fft_w * lanes, 0.0f);
  std::fill(work.narrow_im, work.narrow_im + p.fft_w * lanes, 0.0f);
  for (std::int64_t h = 0; h < src_h; ++h)
    for (std::int64_t w = 0; w < src_w; ++w)
      work.narrow_re[(off_w + w) * lanes + off_h + h] = src[h * src_w + w];
  fft_first_axis(size_w, work.narrow_re, work.narrow_im, lanes, lanes, false);
  // 2. Back to [h][kw] (rows past `lanes` are zero), then the transform along h.
  std::fill(work.plane_re + lanes * p.fft_w, work.plane_re + p.fft_h * p.fft_w, 0.0f);
  std::fill(work.plane_im + lanes * p.fft_w, work.plane_im + p.fft_h * p.fft_w, 0.0f);
  transpose(work.narrow_re, p.fft_w, lanes, lanes, work.plane_re, p.fft_w);
  transpose(work.narrow_im, p.fft_w, lanes, lanes, work.plane_im, p.fft_w);
  fft_first_axis(size_h, work.plane_re, work.plane_im, p.fft_w, p.fft_w, false);
  std::memcpy(out_re, work.plane_re, static_cast<std::size_t>(p.bins()) * sizeof(float));
  std::memcpy(out_im, work.plane_im, static_cast<std::size_t>(p.bins()) * sizeof(float));
}

class ConvFftKernel final : public Kernel {
 public:
  ConvFftKernel(ir::Node node, Activation activation, FftConvPlan plan, std::vector<float> w_re,
                std::vector<float> w_im)
      : node_(std::move(node)),
        activation_(activation),
        plan_(plan),
        size_h_(plan.fft_h),
        size_w_(plan.fft_w),
        size_h_fold_(plan.fft_h / plan.fold_h),
        size_w_fold_(plan.fft_w / plan.fold_w),
        w_re_(std::move(w_re)),
        w_im_(std::move(w_im)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const FftConvPlan& p = plan_;
    const Tensor& x = *inputs[0];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    const Dims& xd = x.dims();
    if (xd.size() != 4 || xd[1] != p.in_channels || xd[2] != p.in_h || xd[3] != p.in_w) {
      return invalid_argument(node_.describe(), ": fft Conv was planned for X [N, ", p.in_channels,
                              ", ", p.in_h, ", ", p.in_w, "], got ", dims_to_string(xd));
    }
    const std::int64_t bins = p.bins();
    const std::int64_t in_plane = p.in_h * p.in_w, out_plane = p.out_h * p.out_w;
    float* spectra = thread_scratch_floats(static_cast<std::size_t>(2 * p.in_channels * bins), 0);
    float* x_re = spectra;
    float* x_im = spectra + p.in_channels * bins;
    const float* bd = bias ? bias->data<float>() : nullptr;
    const float scale = 1.0f / static_cast<float>(p.fft_h * p.fft_w);
    const bool avx2 = has_avx2();
    for (std::int64_t n = 0; n < xd[0]; ++n) {
      const float* image = x.data<float>() + n * p.in_channels * in_plane;
      float* y_image = outputs[0]->data<float>() + n * p.out_channels * out_plane;
      context.pool->parallel_for(p.in_channels, 1, [&](std::int64_t begin, std::int64_t end) {
        const Work work = thread_work(p);
        for (std::int64_t c = begin; c < end; ++c) {
          forward_spectrum(p, size_h_, size_w_, image + c * in_plane, p.in_h, p.in_w, p.pad_top,
                           p.pad_left, work, x_re + c * bins, x_im + c * bins);
        }
      });
      context.pool->parallel_for(p.out_channels, 1, [&](std::int64_t begin, std::int64_t end) {
        const Work work = thread_work(p);
        for (std::int64_t oc = begin; oc < end; ++oc) {
          std::fill(work.acc_re, work.acc_re + bins, 0.0f);
          std::fill(work.acc_im, work.acc_im + bins, 0.0f);
          for (std::int64_t c = 0; c < p.in_channels; ++c) {
            const std::int64_t wo = (oc * p.in_channels + c) * bins;
            if (avx2) {
              accumulate_avx2(work.acc_re, work.acc_im, x_re + c * bins, x_im + c * bins,
                              w_re_.data() + wo, w_im_.data() + wo, bins);
            } else {
              accumulate_generic(work.acc_re, work.acc_im, x_re + c * bins, x_im + c * bins,
                                 w_re_.data() + wo, w_im_.data() + wo, bins);
            }
          }
          inverse_to_output(work, bd ? bd[oc] : 0.0f, scale, y_image + oc * out_plane);
        }
      });
    }
    return Status::ok();
  }

 private:
  // work.acc (a half spectrum) -> strided samples of its inverse transform, plus bias, then the
  // activation, into y [out_h][out_w].
  void inverse_to_output(const Work& work, float bias, float scale, float* y) const {
    const FftConvPlan& p = plan_;
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
          const float* src_re = work.acc_re + kh * p.fft_w;
          const float* src_im = work.acc_im + kh * p.fft_w;
          for (std::int64_t kw = 0; kw < p.fft_w; ++kw) {
            dst_re[kw] = first ? src_re[kw] : dst_re[kw] + src_re[kw];
            dst_im[kw] = first ? src_im[kw] : dst_im[kw] + src_im[kw];
          }
        } else {
          const float* src_re = work.acc_re + (p.fft_h - kh) * p.fft_w;
          const float* src_im = work.acc_im + (p.fft_h - kh) * p.fft_w;
          for (std::int64_t kw = 0; kw < p.fft_w; ++kw) {
            const std::int64_t mirror = kw == 0 ? 0 : p.fft_w - kw;
            dst_re[kw] = first ? src_re[mirror] : dst_re[kw] + src_re[mirror];
            dst_im[kw] = first ? -src_im[mirror] : dst_im[kw] - src_im[mirror];
          }
        }
      }
    }
    // 2. Inverse along h: output row oh is row oh * (stride / fold), i.e. oh when folded. 3. Those
    // rows transposed, folded along w the same way, inverse along w.
    fft_first_axis(size_h_fold_, work.plane_re, work.plane_im, p.fft_w, p.fft_w, true);
    const std::int64_t lanes = p.lanes_out();
    const std::int64_t rows_w = p.fft_w / p.fold_w;
    std::fill(work.narrow_re, work.narrow_re + p.fft_w * lanes, 0.0f);
    std::fill(work.narrow_im, work.narrow_im + p.fft_w * lanes, 0.0f);
    for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
      const std::int64_t h = oh * (p.stride_h / p.fold_h);
      const float* row_re = work.plane_re + h * p.fft_w;
      const float* row_im = work.plane_im + h * p.fft_w;
      for (std::int64_t kw = 0; kw < p.fft_w; ++kw) {
        const std::int64_t k = kw % rows_w;
        work.narrow_re[k * lanes + oh] += row_re[kw];
        work.narrow_im[k * lanes + oh] += row_im[kw];
      }
    }
    fft_first_axis(size_w_fold_, work.narrow_re, work.narrow_im, lanes, lanes, true);
    for (std::int64_t oh = 0; oh < p.out_h; ++oh) {
      float* row = y + oh * p.out_w;
      for (std::int64_t ow = 0; ow < p.out_w; ++ow)
        row[ow] = work.narrow_re[ow * (p.stride_w / p.fold_w) * lanes + oh] * scale + bias;
      apply_activation(activation_, row, p.out_w);
    }
  }

  ir::Node node_;
  Activation activation_;
  FftConvPlan plan_;
  FftSize size_h_, size_w_;            // forward transforms
  FftSize size_h_fold_, size_w_fold_;  // inverse transforms of the folded spectra
  std::vector<float> w_re_, w_im_;     // [out_channels][in_channels][bins]
};

// The plan, or why this node is not one for the FFT tactic.
Expected<FftConvPlan> plan_fft_conv(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  if (!x || !w || !w->is_constant() || w->constant->dims().size() != 4)
    return unsupported("fft Conv: needs constant 2-D weights");
  if (!x->rank_known || x->shape.size() != 4 || !x->shape[1].is_known() ||
      !x->shape[2].is_known() || !x->shape[3].is_known())
    return unsupported("fft Conv: X's channels and spatial dims must be static");
  const Dims x_dims = {1, x->shape[1].value, x->shape[2].value, x->shape[3].value};
  VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry g,
                         ir::resolve_conv_geometry(node, x_dims, w->constant->dims()));
  if (g.group != 1 || g.dilations[0] != 1 || g.dilations[1] != 1)
    return unsupported("fft Conv: group 1 and dilation 1 only");
  FftConvPlan p;
  p.in_channels = g.in_channels;
  p.out_channels = g.out_channels;
  p.in_h = g.input[0];
  p.in_w = g.input[1];
  p.kernel_h = g.kernel[0];
  p.kernel_w = g.kernel[1];
  p.out_h = g.output[0];
  p.out_w = g.output[1];
  p.stride_h = g.strides[0];
  p.stride_w = g.strides[1];
  p.pad_top = g.pads_begin[0];
  p.pad_left = g.pads_begin[1];
  // The transform must hold every input sample the strided outputs read (padding included), so
  // the circular correlation does not wrap into them.
  const std::int64_t span_h = std::max((p.out_h - 1) * p.stride_h + p.kernel_h, p.pad_top + p.in_h);
  const std::int64_t span_w =
      std::max((p.out_w - 1) * p.stride_w + p.kernel_w, p.pad_left + p.in_w);
  p.fft_h = std::max<std::int64_t>(2, next_power_of_two(span_h));
  p.fft_w = std::max<std::int64_t>(kLanes, next_power_of_two(span_w));
  p.half_rows = p.fft_h / 2 + 1;
  if (p.fft_h % p.stride_h == 0) p.fold_h = p.stride_h;
  if (p.fft_w % p.stride_w == 0) p.fold_w = p.stride_w;
  if (p.out_h <= 0 || p.out_w <= 0 || p.in_channels <= 0 || p.out_channels <= 0)
    return unsupported("fft Conv: empty tensors");
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

bool conv_fft_applies(const ir::Node& node) {
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant() || w->constant->dims().size() != 4) return false;
  const Dims& wd = w->constant->dims();
  if (wd[2] * wd[3] < kConvFftMinKernelArea) return false;
  return plan_fft_conv(node).has_value();
}

Expected<std::unique_ptr<Kernel>> make_conv_fft_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  VOXRT_ASSIGN_OR_RETURN(FftConvPlan p, plan_fft_conv(node));
  const std::int64_t bins = p.bins();
  const auto planes = static_cast<std::size_t>(p.out_channels * p.in_channels);
  std::vector<float> w_re(planes * static_cast<std::size_t>(bins));
  std::vector<float> w_im(w_re.size());
  const FftSize size_h(p.fft_h), size_w(p.fft_w);
  const float* wd = node.input(1)->constant->data<float>();
  const std::int64_t taps = p.kernel_h * p.kernel_w;
  // One plane's work buffers; the weight planes are few enough (and this runs once) that the
  // calling thread does them alone.
  const Work work = thread_work(p);
  for (std::size_t plane = 0; plane < planes; ++plane) {
    const auto at = plane * static_cast<std::size_t>(bins);
    forward_spectrum(p, size_h, size_w, wd + plane * static_cast<std::size_t>(taps), p.kernel_h,
                     p.kernel_w, 0, 0, work, w_re.data() + at, w_im.data() + at);
  }
  return std::unique_ptr<Kernel>(
      new ConvFftKernel(detached_node(node), activation, p, std::move(w_re), std::move(w_im)));
}

}  // namespace voxrt::backends::cpu::dense
