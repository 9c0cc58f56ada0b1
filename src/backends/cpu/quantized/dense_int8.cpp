// INT8 Gemm / MatMul / FusedMatMul and Conv / FusedConv (layers marked int8 by the builder):
// the activation input is quantized on entry with its calibrated scale (one pass over it, small
// next to the product), the constant weights were quantized per output channel once at kernel
// creation, and the output leaves in FP32 with bias and activation applied, so the layers
// around stay FP32. Tactics: the reference (plain loops on the same rounded values; for Conv a
// direct convolution, independent of the unfolding the fast tactics use), our AVX-512 VNNI GEMM
// (int8_gemm.h), our AMX GEMM (int8_gemm_amx.h) and oneDNN's u8 x s8 matmul
// (int8_gemm_runner.h); a convolution is unfolded into
// rows of quantized taps for the last two.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/activation_avx512.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/quantized/int8_gemm_runner.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::quantized {
namespace {

using dense::Activation;

// The fused activation after the INT8 GEMM, one pass over the output. Every INT8 tactic of a
// layer (the reference included) goes through here, so they stay bit-identical; the AVX-512 form
// matters for the transcendental ones (a Conformer FFN's Swish over 16 x 1024 outputs took longer
// in the scalar loop than the GEMM itself, so the FP32 tactics, which fuse it, timed faster).
void apply_int8_activation(const Activation& activation, float* y, std::int64_t count) {
  if (cpu_has_avx512f()) {
    dense::activate_span(activation, y, count);
  } else {
    dense::apply_activation(activation, y, count);
  }
}

// Rows per unit of parallel work when there are enough rows to split.
constexpr std::int64_t kRowsPerUnit = 48;

// Ours and the reference, split across the pool: by panels when the rows are few (a streaming
// chunk), else by blocks of rows.
class OwnInt8GemmRunner final : public Int8GemmRunner {
 public:
  OwnInt8GemmRunner(const PackedInt8Weights& weights, const Int8Epilogue& epilogue, bool vnni)
      : weights_(weights), epilogue_(epilogue), vnni_(vnni) {}

  Status run(const std::uint8_t* a, std::int64_t lda, std::int64_t rows, float* c, std::int64_t ldc,
             KernelContext& context) const override {
    const auto gemm = vnni_ ? int8_gemm_vnni : int8_gemm_reference;
    const std::int64_t threads = context.pool->threads();
    if (threads == 1) {
      gemm(a, lda, rows, weights_, epilogue_, 0, weights_.panels, c, ldc);
      return Status::ok();
    }
    const std::int64_t row_units = (rows + kRowsPerUnit - 1) / kRowsPerUnit;
    if (row_units >= 2 * threads) {
      context.pool->parallel_for(row_units, 1, [&](std::int64_t begin, std::int64_t end) {
        const std::int64_t r0 = begin * kRowsPerUnit, r1 = std::min(rows, end * kRowsPerUnit);
        gemm(a + r0 * lda, lda, r1 - r0, weights_, epilogue_, 0, weights_.panels, c + r0 * ldc,
             ldc);
      });
      return Status::ok();
    }
    context.pool->parallel_for(weights_.panels, 1, [&](std::int64_t begin, std::int64_t end) {
      gemm(a, lda, rows, weights_, epilogue_, begin, end, c, ldc);
    });
    return Status::ok();
  }

 private:
  const PackedInt8Weights& weights_;
  const Int8Epilogue& epilogue_;
  bool vnni_;
};

// A layer's packed weights, folded epilogue and input quantization, at a stable address (the
// GEMM runner refers to them).
struct Int8Layer {
  PackedInt8Weights weights;
  Int8Epilogue epilogue;
  ActivationQuantization input;
  std::unique_ptr<Int8GemmRunner> gemm;  // null for the direct reference convolution
};

// ---- Gemm / MatMul / FusedMatMul -------------------------------------------------------------

class MatMulInt8Kernel final : public Kernel {
 public:
  MatMulInt8Kernel(ir::Node node, Activation activation, std::unique_ptr<Int8Layer> layer)
      : node_(std::move(node)), activation_(activation), layer_(std::move(layer)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& a = *inputs[0];
    const PackedInt8Weights& weights = layer_->weights;
    const std::int64_t depth = a.rank() == 0 ? 1 : a.dims().back();
    if (depth != weights.depth) {
      return invalid_argument(node_.describe(), ": A's last dim is ", depth,
                              ", the int8 weights take ", weights.depth);
    }
    const std::int64_t rows = depth == 0 ? 0 : a.element_count() / depth;
    float* y = outputs[0]->data<float>();
    if (rows == 0) return Status::ok();
    const std::int64_t lda = weights.padded_depth();
    auto* quantized = static_cast<std::uint8_t*>(
        dense::thread_scratch_bytes(static_cast<std::size_t>(rows * lda), 0));
    quantize_rows_padded(a.data<float>(), rows, depth, depth, layer_->input, lda, quantized);
    VOXRT_RETURN_IF_ERROR(layer_->gemm->run(quantized, lda, rows, y, weights.columns, context));
    apply_int8_activation(activation_, y, rows * weights.columns);
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
  std::unique_ptr<Int8Layer> layer_;
};

// ---- Conv / FusedConv --------------------------------------------------------------------------

class ConvInt8Kernel final : public Kernel {
 public:
  ConvInt8Kernel(ir::Node node, Activation activation, std::unique_ptr<Int8Layer> layer)
      : node_(std::move(node)), activation_(activation), layer_(std::move(layer)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry geometry,
                           ir::resolve_conv_geometry(node_, x.dims(), w.dims()));
    if (geometry.input.size() > 3 || geometry.group != 1) {
      return unsupported(node_.describe(), ": int8 Conv handles 1 to 3 spatial dims, group 1");
    }
    const dense::Geometry3 g = dense::to_3d(geometry);
    const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const std::int64_t positions = g.out[0] * g.out[1] * g.out[2];
    const std::int64_t out_channels = geometry.out_channels;
    float* y = outputs[0]->data<float>();
    if (positions == 0 || geometry.batch == 0) return Status::ok();
    // The whole input quantized once; padding is then the zero point.
    auto* xq = static_cast<std::uint8_t*>(
        dense::thread_scratch_bytes(static_cast<std::size_t>(x.element_count()), 0));
    quantize_activations(x.data<float>(), x.element_count(), layer_->input, xq);
    for (std::int64_t n = 0; n < geometry.batch; ++n) {
      const std::uint8_t* image = xq + n * geometry.in_channels * in_plane;
      float* y_image = y + n * out_channels * positions;
      if (layer_->gemm) {
        VOXRT_RETURN_IF_ERROR(
            run_unfolded(g, geometry.in_channels, image, positions, y_image, context));
      } else {
        run_direct(g, geometry.in_channels, image, positions, y_image);
      }
      apply_int8_activation(activation_, y_image, out_channels * positions);
    }
    return Status::ok();
  }

 private:
  // Rows of taps, one per output position: [position][channel][kd][kh][kw], then the GEMM into
  // [position][out channel] and a transpose into the output's [out channel][position].
  Status run_unfolded(const dense::Geometry3& g, std::int64_t channels, const std::uint8_t* x,
                      std::int64_t positions, float* y, KernelContext& context) const {
    const PackedInt8Weights& weights = layer_->weights;
    const std::int64_t lda = weights.padded_depth();
    auto* rows = static_cast<std::uint8_t*>(
        dense::thread_scratch_bytes(static_cast<std::size_t>(positions * lda), 1));
    const auto zero = static_cast<std::uint8_t>(layer_->input.zero_point);
    const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    if (is_pointwise(g, positions)) {
      // A 1 x 1 convolution (a Conformer's pointwise_conv1/2): the rows are the input
      // transposed, [channel][position] -> [position][channel]. With the general loop below,
      // its index arithmetic per tap, a 16-frame chunk's 256 -> 512 layer took 40 us with the
      // amx_int8 GEMM, slower than the FP32 tactic (a 256 -> 1024 MatMul took 26).
      for (std::int64_t p = 0; p < positions; ++p) {
        std::memset(rows + p * lda + channels, zero, static_cast<std::size_t>(lda - channels));
      }
      for (std::int64_t c = 0; c < channels; ++c) {
        const std::uint8_t* channel = x + c * in_plane;
        for (std::int64_t p = 0; p < positions; ++p) rows[p * lda + c] = channel[p];
      }
    } else {
      unfold(g, channels, x, positions, zero, lda, rows);
    }
    float* by_position =
        dense::thread_scratch_floats(static_cast<std::size_t>(positions * weights.columns), 2);
    VOXRT_RETURN_IF_ERROR(
        layer_->gemm->run(rows, lda, positions, by_position, weights.columns, context));
    // [position][out channel] -> [out channel][position], in blocks of 16 x 16 that stay in L1.
    constexpr std::int64_t kBlock = 16;
    for (std::int64_t oc0 = 0; oc0 < weights.columns; oc0 += kBlock) {
      const std::int64_t oc1 = std::min(weights.columns, oc0 + kBlock);
      for (std::int64_t p0 = 0; p0 < positions; p0 += kBlock) {
        const std::int64_t p1 = std::min(positions, p0 + kBlock);
        for (std::int64_t oc = oc0; oc < oc1; ++oc) {
          for (std::int64_t p = p0; p < p1; ++p)
            y[oc * positions + p] = by_position[p * weights.columns + oc];
        }
      }
    }
    return Status::ok();
  }

  static bool is_pointwise(const dense::Geometry3& g, std::int64_t positions) {
    for (int axis = 0; axis < 3; ++axis) {
      if (g.kernel[axis] != 1 || g.stride[axis] != 1 || g.pad[axis] != 0) return false;
    }
    return positions == g.in[0] * g.in[1] * g.in[2];
  }

  // The general unfolding: one row of taps per output position, the zero point where a tap
  // falls in the padding.
  static void unfold(const dense::Geometry3& g, std::int64_t channels, const std::uint8_t* x,
                     std::int64_t positions, std::uint8_t zero, std::int64_t lda,
                     std::uint8_t* rows) {
    const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    for (std::int64_t p = 0; p < positions; ++p) {
      const std::int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1],
                         od = p / (g.out[2] * g.out[1]);
      std::uint8_t* row = rows + p * lda;
      std::int64_t k = 0;
      for (std::int64_t c = 0; c < channels; ++c) {
        for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
          const std::int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
          for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
            const std::int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
            for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, ++k) {
              const std::int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
              const bool inside =
                  id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
              row[k] = inside ? x[c * in_plane + (id * g.in[1] + ih) * g.in[2] + iw] : zero;
            }
          }
        }
      }
      std::memset(row + k, zero, static_cast<std::size_t>(lda - k));
    }
  }

  // The reference: a direct convolution over the quantized input (padding = the zero point),
  // int32 sums, the same epilogue.
  void run_direct(const dense::Geometry3& g, std::int64_t channels, const std::uint8_t* x,
                  std::int64_t positions, float* y) const {
    const std::int64_t in_plane = g.in[0] * g.in[1] * g.in[2];
    const PackedInt8Weights& weights = layer_->weights;
    const Int8Epilogue& epilogue = layer_->epilogue;
    for (std::int64_t oc = 0; oc < weights.columns; ++oc) {
      const std::int8_t* w = weights.rows.values.data() + oc * weights.depth;
      const auto i = static_cast<std::size_t>(oc);
      for (std::int64_t p = 0; p < positions; ++p) {
        const std::int64_t ow = p % g.out[2], oh = (p / g.out[2]) % g.out[1],
                           od = p / (g.out[2] * g.out[1]);
        std::int32_t acc = 0;
        std::int64_t k = 0;
        for (std::int64_t c = 0; c < channels; ++c) {
          for (std::int64_t kd = 0; kd < g.kernel[0]; ++kd) {
            for (std::int64_t kh = 0; kh < g.kernel[1]; ++kh) {
              for (std::int64_t kw = 0; kw < g.kernel[2]; ++kw, ++k) {
                const std::int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
                const std::int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
                const std::int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                const bool inside =
                    id >= 0 && id < g.in[0] && ih >= 0 && ih < g.in[1] && iw >= 0 && iw < g.in[2];
                const std::int32_t value =
                    inside ? x[c * in_plane + (id * g.in[1] + ih) * g.in[2] + iw]
                           : layer_->input.zero_point;
                acc += value * w[k];
              }
            }
          }
        }
        y[oc * positions + p] =
            std::fma(static_cast<float>(acc - epilogue.zero_point_sums[i]), epilogue.scales[i],
                     epilogue.bias.empty() ? 0.0f : epilogue.bias[i]);
      }
    }
  }

  ir::Node node_;
  Activation activation_;
  std::unique_ptr<Int8Layer> layer_;
};

bool is_conv(ir::OpKind op) {
  return op == ir::OpKind::kConv || op == ir::OpKind::kFusedConv;
}

}  // namespace

bool dense_int8_applies(const ir::Node& node) {
  if (node.inputs.size() < 2 || !node.input(0) || !node.input(1) || !dense::all_inputs_f32(node))
    return false;
  if (!dense::read_activation(node).has_value()) return false;
  const ir::Value* w = node.input(1);
  if (!w->is_constant()) return false;
  if (is_conv(node.op)) {
    if (node.attrs.get_int("group", 1) != 1 || w->constant->rank() < 3 || w->constant->rank() > 5)
      return false;
    const ir::Value* bias = node.input(2);
    return !bias || bias->is_constant();
  }
  auto config = dense::read_matmul_config(node);
  if (!config || config->trans_a || w->constant->rank() != 2) return false;
  const std::int64_t columns = config->trans_b ? w->constant->dim(0) : w->constant->dim(1);
  return dense::constant_column_bias(node, *config, columns).has_value();
}

Expected<std::unique_ptr<Int8GemmRunner>> make_int8_gemm_runner(
    Int8GemmKind kind, const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
    const ActivationQuantization& input) {
  switch (kind) {
    case Int8GemmKind::kReference:
      return std::unique_ptr<Int8GemmRunner>(new OwnInt8GemmRunner(weights, epilogue, false));
    case Int8GemmKind::kVnni:
      if (!vnni_available()) return unsupported("the vnni_int8 GEMM needs AVX-512 VNNI");
      return std::unique_ptr<Int8GemmRunner>(new OwnInt8GemmRunner(weights, epilogue, true));
    case Int8GemmKind::kAmx: return make_amx_int8_gemm_runner(weights, epilogue, true);
    case Int8GemmKind::kAmxUnsplit: return make_amx_int8_gemm_runner(weights, epilogue, false);
    case Int8GemmKind::kOneDnn: return make_onednn_int8_gemm_runner(weights, epilogue, input);
  }
  return internal_error("unknown int8 GEMM kind");
}

Expected<std::unique_ptr<Kernel>> make_dense_int8_kernel(const ir::Node& node, Int8GemmKind kind) {
  if (!dense_int8_applies(node)) {
    return unsupported(node.describe(), ": no int8 kernel (needs f32 tensors, constant weights, ",
                       "Conv group 1, MatMul without transposed A and with a [N] bias)");
  }
  auto layer = std::make_unique<Int8Layer>();
  VOXRT_ASSIGN_OR_RETURN(layer->input, read_input_quantization(node));
  VOXRT_ASSIGN_OR_RETURN(Activation activation, dense::read_activation(node));
  const Tensor& w = *node.input(1)->constant;
  if (is_conv(node.op)) {
    // [out, in, taps...] is already one row of weights per output channel.
    const std::int64_t out_channels = w.dim(0);
    const std::int64_t depth = w.element_count() / std::max<std::int64_t>(out_channels, 1);
    layer->weights = pack_int8_weights(quantize_rows(w.data<float>(), out_channels, depth, depth));
    const ir::Value* bias = node.input(2);
    layer->epilogue = make_int8_epilogue(layer->weights, layer->input, 1.0f,
                                         bias ? bias->constant->data<float>() : nullptr);
    // The reference convolves directly; the others unfold and multiply.
    if (kind != Int8GemmKind::kReference) {
      VOXRT_ASSIGN_OR_RETURN(
          layer->gemm, make_int8_gemm_runner(kind, layer->weights, layer->epilogue, layer->input));
    }
    return std::unique_ptr<Kernel>(
        new ConvInt8Kernel(dense::detached_node(node), activation, std::move(layer)));
  }
  VOXRT_ASSIGN_OR_RETURN(dense::MatMulConfig config, dense::read_matmul_config(node));
  const std::int64_t depth = config.trans_b ? w.dim(1) : w.dim(0);
  const std::int64_t columns = config.trans_b ? w.dim(0) : w.dim(1);
  std::vector<float> by_column;
  if (!config.trans_b) {
    by_column.resize(static_cast<std::size_t>(depth * columns));
    for (std::int64_t k = 0; k < depth; ++k) {
      for (std::int64_t n = 0; n < columns; ++n)
        by_column[static_cast<std::size_t>(n * depth + k)] = w.data<float>()[k * columns + n];
    }
  }
  layer->weights = pack_int8_weights(
      quantize_rows(config.trans_b ? w.data<float>() : by_column.data(), columns, depth, depth));
  const std::vector<float> bias = *dense::constant_column_bias(node, config, columns);
  layer->epilogue = make_int8_epilogue(layer->weights, layer->input, config.alpha,
                                       bias.empty() ? nullptr : bias.data());
  VOXRT_ASSIGN_OR_RETURN(
      layer->gemm, make_int8_gemm_runner(kind, layer->weights, layer->epilogue, layer->input));
  return std::unique_ptr<Kernel>(
      new MatMulInt8Kernel(dense::detached_node(node), activation, std::move(layer)));
}

}  // namespace voxrt::backends::cpu::quantized
