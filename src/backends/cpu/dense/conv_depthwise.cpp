// Depthwise 1-D Conv / FusedConv on AVX-512 ("depthwise_avx512"): group = in channels = out
// channels, W [C, 1, K] constant, any stride, dilation and padding. Conformer and Zipformer run
// one per layer (kernel 15-31 over a chunk plus its cached frames); im2col turned each channel
// into a GEMM of one row. Here each channel's row is copied once into a zero-padded scratch row
// and 16 output positions at a time take K broadcast-weight FMAs; bias, activation and clamp
// are applied in registers. Channels are split over the context's pool.
#include <algorithm>
#include <vector>

#include "backends/cpu/dense/activation_avx512.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

VOXRT_AVX512 void depthwise_row(const float* padded, const float* w, std::int64_t kernel,
                                std::int64_t stride, std::int64_t dilation, float bias,
                                const Activation& act, float* y, std::int64_t outputs) {
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i step = _mm512_set1_epi32(static_cast<int>(stride));
  for (std::int64_t t = 0; t < outputs; t += 16) {
    const std::int64_t left = outputs - t;
    const __mmask16 mask =
        left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    __m512 acc = _mm512_set1_ps(bias);
    if (stride == 1) {
      for (std::int64_t k = 0; k < kernel; ++k) {
        acc = _mm512_fmadd_ps(_mm512_set1_ps(w[k]),
                              _mm512_maskz_loadu_ps(mask, padded + t + k * dilation), acc);
      }
    } else {
      const __m512i index = _mm512_mullo_epi32(lanes, step);
      for (std::int64_t k = 0; k < kernel; ++k) {
        const float* base = padded + t * stride + k * dilation;
        acc = _mm512_fmadd_ps(_mm512_set1_ps(w[k]),
                              _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mask, index, base, 4),
                              acc);
      }
    }
    _mm512_mask_storeu_ps(y + t, mask, activate(act, acc));
  }
}

class DepthwiseConvKernel final : public Kernel {
 public:
  DepthwiseConvKernel(ir::Node node, Activation activation, Tensor weights, std::vector<float> bias)
      : node_(std::move(node)),
        activation_(activation),
        weights_(std::move(weights)),
        bias_(std::move(bias)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    VOXRT_ASSIGN_OR_RETURN(const ir::ConvGeometry g,
                           ir::resolve_conv_geometry(node_, x.dims(), weights_.dims()));
    if (g.input.size() != 1 || g.group != g.in_channels || g.out_channels != g.in_channels) {
      return invalid_argument(node_.describe(), ": depthwise_avx512 takes a 1-D depthwise conv");
    }
    const std::int64_t channels = g.in_channels, in = g.input[0], out = g.output[0];
    const std::int64_t kernel = g.kernel[0], stride = g.strides[0], dilation = g.dilations[0];
    const std::int64_t pad = g.pads_begin[0];
    // Every tap any output reads, zero outside the input.
    const std::int64_t span = std::max<std::int64_t>(
        (out - 1) * stride + (kernel - 1) * dilation + 1 + 16 * stride, in + pad);
    const float* xd = x.data<float>();
    float* yd = outputs[0]->data<float>();
    const float* wd = weights_.data<float>();
    if (out == 0 || channels == 0 || g.batch == 0) return Status::ok();
    context.pool->parallel_for(
        g.batch * channels, std::max<std::int64_t>(1, 4096 / std::max<std::int64_t>(out, 1)),
        [&](std::int64_t begin, std::int64_t end) {
          float* padded = thread_scratch_floats(static_cast<std::size_t>(span), 0);
          for (std::int64_t row = begin; row < end; ++row) {
            const std::int64_t c = row % channels;
            std::fill(padded, padded + span, 0.0f);
            const std::int64_t copy = std::min(in, span - pad);
            std::copy(xd + row * in, xd + row * in + copy, padded + pad);
            depthwise_row(padded, wd + c * kernel, kernel, stride, dilation,
                          bias_.empty() ? 0.0f : bias_[static_cast<std::size_t>(c)], activation_,
                          yd + row * out, out);
          }
        });
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
  Tensor weights_;
  std::vector<float> bias_;
};

}  // namespace

bool conv_depthwise_applies(const ir::Node& node) {
  if (!cpu_has_avx512f() || !is_conv1d_with_constant_weights(node) ||
      node.input(1)->constant->dim(1) != 1)
    return false;
  const std::int64_t channels = node.input(1)->constant->dim(0);
  return node.attrs.get_int("group", 1) == channels && channels > 1;
}

Expected<std::unique_ptr<Kernel>> make_conv_depthwise_kernel(const ir::Node& node) {
  if (!conv_depthwise_applies(node)) {
    return unsupported(node.describe(),
                       ": depthwise_avx512 needs AVX-512 and a 1-D depthwise conv with constant "
                       "weights [C, 1, K]");
  }
  VOXRT_ASSIGN_OR_RETURN(const Activation activation, read_activation(node));
  std::vector<float> bias;
  if (const ir::Value* b = node.input(2)) {
    bias.assign(b->constant->data<float>(),
                b->constant->data<float>() + b->constant->element_count());
  }
  return std::unique_ptr<Kernel>(new DepthwiseConvKernel(
      detached_node(node), activation, *node.input(1)->constant, std::move(bias)));
}

}  // namespace voxrt::backends::cpu::dense
