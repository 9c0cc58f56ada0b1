// Conv / FusedConv computed directly with AVX2 FMAs (tactic "direct_avx2"): 2-D, group 1,
// constant weights. It is for convolutions with few input channels and large kernels, such as
// DS2's first layer (1 -> 32 channels, 41 x 11 taps, stride 2): there im2col + sgemm multiplies a
// 32-row weight matrix, which OpenBLAS runs at ~35 GFLOP/s on an AVX2 EPYC, and the unfolded
// input is 451 times the image. Here:
//   - the weights are repacked once to [oc block of 32][c][kh][kw][32 lanes] (zero lanes past
//     the output channels), so the taps of one block are read in order;
//   - each worker copies its image into a zero-padded scratch once, so the inner loop has no
//     bounds checks;
//   - a register block of 3 output positions x 32 output channels (12 accumulators) takes one
//     tap per step: 4 weight loads and 3 broadcasts for 12 FMAs, which keeps Zen 2 / Skylake
//     FMA-bound rather than load-bound (two FMAs and two loads a cycle);
//   - a finished output row [ow][32] is transposed into Y (NCHW) with the bias and activation.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

constexpr std::int64_t kLanes = 32;  // output channels per register block (4 x 8 floats)
constexpr int kPositions = 3;        // output positions per register block

struct DirectGeometry {
  std::int64_t channels, in_h, in_w, kernel_h, kernel_w, out_h, out_w;
  std::int64_t stride_h, stride_w, dilation_h, dilation_w, pad_h, pad_w;
  std::int64_t padded_h, padded_w;  // the zero-padded image in scratch
};

// Output positions ow0 .. ow0 + 2 of output row `row` (the padded input row oh * stride_h) for
// one 32-channel block, into out [3][32]. The accumulators are named variables: as an array GCC
// stored all twelve to the stack on every tap.
VOXRT_AVX2 void block_positions(const DirectGeometry& g, const float* image, const float* weights,
                                std::int64_t row, std::int64_t ow0, float* out) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0,
         a8 = a0, a9 = a0, a10 = a0, a11 = a0;
  const std::int64_t plane = g.padded_h * g.padded_w, sw = g.stride_w, dw = g.dilation_w;
  const float* w = weights;
  for (std::int64_t c = 0; c < g.channels; ++c) {
    for (std::int64_t kh = 0; kh < g.kernel_h; ++kh) {
      const float* x = image + c * plane + (row + kh * g.dilation_h) * g.padded_w + ow0 * sw;
      for (std::int64_t kw = 0; kw < g.kernel_w; ++kw, w += kLanes, x += dw) {
        // 12 accumulators + 3 broadcasts + 1 weight vector: the 16 ymm registers exactly.
        const __m256 x0 = _mm256_broadcast_ss(x), x1 = _mm256_broadcast_ss(x + sw),
                     x2 = _mm256_broadcast_ss(x + 2 * sw);
        __m256 wv = _mm256_loadu_ps(w);
        a0 = _mm256_fmadd_ps(wv, x0, a0);
        a1 = _mm256_fmadd_ps(wv, x1, a1);
        a2 = _mm256_fmadd_ps(wv, x2, a2);
        wv = _mm256_loadu_ps(w + 8);
        a3 = _mm256_fmadd_ps(wv, x0, a3);
        a4 = _mm256_fmadd_ps(wv, x1, a4);
        a5 = _mm256_fmadd_ps(wv, x2, a5);
        wv = _mm256_loadu_ps(w + 16);
        a6 = _mm256_fmadd_ps(wv, x0, a6);
        a7 = _mm256_fmadd_ps(wv, x1, a7);
        a8 = _mm256_fmadd_ps(wv, x2, a8);
        wv = _mm256_loadu_ps(w + 24);
        a9 = _mm256_fmadd_ps(wv, x0, a9);
        a10 = _mm256_fmadd_ps(wv, x1, a10);
        a11 = _mm256_fmadd_ps(wv, x2, a11);
      }
    }
  }
  _mm256_storeu_ps(out, a0);
  _mm256_storeu_ps(out + 8, a3);
  _mm256_storeu_ps(out + 16, a6);
  _mm256_storeu_ps(out + 24, a9);
  _mm256_storeu_ps(out + kLanes, a1);
  _mm256_storeu_ps(out + kLanes + 8, a4);
  _mm256_storeu_ps(out + kLanes + 16, a7);
  _mm256_storeu_ps(out + kLanes + 24, a10);
  _mm256_storeu_ps(out + 2 * kLanes, a2);
  _mm256_storeu_ps(out + 2 * kLanes + 8, a5);
  _mm256_storeu_ps(out + 2 * kLanes + 16, a8);
  _mm256_storeu_ps(out + 2 * kLanes + 24, a11);
}

// One output row of one 32-channel block into out [out_w rounded up to 3][32]. A last block
// past out_w reads the padding columns kept for it and its extra positions are not used.
void block_row(const DirectGeometry& g, const float* image, const float* weights, std::int64_t oh,
               float* out) {
  const std::int64_t row = oh * g.stride_h;
  for (std::int64_t ow = 0; ow < g.out_w; ow += kPositions)
    block_positions(g, image, weights, row, ow, out + ow * kLanes);
}

class ConvDirectKernel final : public Kernel {
 public:
  ConvDirectKernel(ir::Node node, Activation activation, std::vector<float> packed,
                   std::int64_t out_channels, std::int64_t taps)
      : node_(std::move(node)),
        activation_(activation),
        packed_(std::move(packed)),
        out_channels_(out_channels),
        block_floats_(taps * kLanes) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry geometry,
                           ir::resolve_conv_geometry(node_, x.dims(), inputs[1]->dims()));
    if (geometry.input.size() != 2 || geometry.group != 1)
      return unsupported(node_.describe(), ": direct_avx2 Conv takes 2-D, group 1 only");
    DirectGeometry g{};
    g.channels = geometry.in_channels;
    g.in_h = geometry.input[0];
    g.in_w = geometry.input[1];
    g.kernel_h = geometry.kernel[0];
    g.kernel_w = geometry.kernel[1];
    g.out_h = geometry.output[0];
    g.out_w = geometry.output[1];
    g.stride_h = geometry.strides[0];
    g.stride_w = geometry.strides[1];
    g.dilation_h = geometry.dilations[0];
    g.dilation_w = geometry.dilations[1];
    g.pad_h = geometry.pads_begin[0];
    g.pad_w = geometry.pads_begin[1];
    // Every input row and column an output reads, with pads_begin zeros in front; reads past the
    // input (pads_end, or a stride that overshoots) land in zeros too.
    g.padded_h = std::max(g.pad_h + g.in_h,
                          (g.out_h - 1) * g.stride_h + (g.kernel_h - 1) * g.dilation_h + 1);
    // The columns of a last register block past out_w are zeros too.
    const std::int64_t blocked_w = (g.out_w + kPositions - 1) / kPositions * kPositions;
    g.padded_w = std::max(g.pad_w + g.in_w,
                          (blocked_w - 1) * g.stride_w + (g.kernel_w - 1) * g.dilation_w + 1);
    const std::int64_t blocks = (out_channels_ + kLanes - 1) / kLanes;
    const std::int64_t in_plane = g.in_h * g.in_w, out_plane = g.out_h * g.out_w;
    const float* xd = x.data<float>();
    const float* bd = bias ? bias->data<float>() : nullptr;
    float* yd = outputs[0]->data<float>();
    if (out_plane == 0 || geometry.batch == 0) return Status::ok();
    // Work items: (image, row band). Bands of rows keep every thread busy at batch 1 while each
    // worker pads its image only once per band.
    const std::int64_t threads = context.pool->threads();
    const std::int64_t bands = std::min(g.out_h, std::max<std::int64_t>(1, threads * 4));
    const std::int64_t rows_per_band = (g.out_h + bands - 1) / bands;
    context.pool->parallel_for(
        geometry.batch * bands, 1, [&](std::int64_t begin, std::int64_t end) {
          const std::int64_t padded_floats = g.channels * g.padded_h * g.padded_w;
          float* image = thread_scratch_floats(static_cast<std::size_t>(padded_floats), 0);
          float* row_out = thread_scratch_floats(static_cast<std::size_t>(blocked_w * kLanes), 1);
          std::int64_t padded_image = -1;
          for (std::int64_t unit = begin; unit < end; ++unit) {
            const std::int64_t n = unit / bands, band = unit % bands;
            const std::int64_t oh_begin = band * rows_per_band,
                               oh_end = std::min(g.out_h, oh_begin + rows_per_band);
            if (oh_begin >= oh_end) continue;
            if (padded_image != n) {
              std::fill(image, image + padded_floats, 0.0f);
              for (std::int64_t c = 0; c < g.channels; ++c) {
                for (std::int64_t h = 0; h < g.in_h; ++h) {
                  std::memcpy(image + (c * g.padded_h + g.pad_h + h) * g.padded_w + g.pad_w,
                              xd + (n * g.channels + c) * in_plane + h * g.in_w,
                              static_cast<std::size_t>(g.in_w) * sizeof(float));
                }
              }
              padded_image = n;
            }
            for (std::int64_t blk = 0; blk < blocks; ++blk) {
              const std::int64_t oc0 = blk * kLanes, lanes = std::min(kLanes, out_channels_ - oc0);
              for (std::int64_t oh = oh_begin; oh < oh_end; ++oh) {
                block_row(g, image, packed_.data() + blk * block_floats_, oh, row_out);
                for (std::int64_t lane = 0; lane < lanes; ++lane) {
                  float* y = yd + (n * out_channels_ + oc0 + lane) * out_plane + oh * g.out_w;
                  const float b = bd ? bd[oc0 + lane] : 0.0f;
                  for (std::int64_t ow = 0; ow < g.out_w; ++ow)
                    y[ow] = row_out[ow * kLanes + lane] + b;
                  apply_activation(activation_, y, g.out_w);
                }
              }
            }
          }
        });
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
  std::vector<float> packed_;  // [block][c][kh][kw][32]
  std::int64_t out_channels_, block_floats_;
};

}  // namespace

bool conv_direct_applies(const ir::Node& node) {
  if (!cpu_has_avx2_fma()) return false;
  const ir::Value* x = node.input(0);
  const ir::Value* w = node.input(1);
  if (!w || !w->is_constant() || w->constant->dims().size() != 4) return false;
  if (x && x->rank_known && x->shape.size() != 4) return false;
  return node.attrs.get_int("group", 1) == 1;
}

Expected<std::unique_ptr<Kernel>> make_conv_direct_kernel(const ir::Node& node) {
  if (!conv_direct_applies(node))
    return unsupported(node.describe(),
                       ": direct_avx2 needs AVX2/FMA, constant 4-D weights and group 1");
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  const Tensor& w = *node.input(1)->constant;
  const std::int64_t out_channels = w.dim(0), taps = w.dim(1) * w.dim(2) * w.dim(3);
  const std::int64_t blocks = (out_channels + kLanes - 1) / kLanes;
  std::vector<float> packed(static_cast<std::size_t>(blocks * taps * kLanes), 0.0f);
  const float* wd = w.data<float>();
  for (std::int64_t oc = 0; oc < out_channels; ++oc) {
    float* block = packed.data() + (oc / kLanes) * taps * kLanes;
    for (std::int64_t t = 0; t < taps; ++t) block[t * kLanes + oc % kLanes] = wd[oc * taps + t];
  }
  return std::unique_ptr<Kernel>(
      new ConvDirectKernel(detached_node(node), activation, std::move(packed), out_channels, taps));
}

}  // namespace voxrt::backends::cpu::dense
