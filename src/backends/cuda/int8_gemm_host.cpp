#include "backends/cuda/int8_gemm_host.h"

#include <algorithm>
#include <cmath>

#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/cuda/dense_common.h"

namespace voxrt::backends::cuda {
namespace {

namespace quantized = cpu::quantized;

bool is_matmul(const ir::Node& node) {
  return node.op == ir::OpKind::kMatMul || node.op == ir::OpKind::kFusedMatMul ||
         node.op == ir::OpKind::kGemm;
}

}  // namespace

bool cuda_int8_applies(const ir::Node& node) {
  // The CPU's INT8 candidates (the builder calibrates and measures on the CPU) that are GEMMs.
  if (!quantized::dense_int8_applies(node) || !read_activation(node).has_value()) return false;
  if (is_conv(node)) {
    const Tensor& w = *node.input(1)->constant;
    const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
    return (w.rank() == 3 || w.rank() == 4) && w.dtype() == DType::kF32 &&
           (auto_pad == "NOTSET" || auto_pad == "VALID") &&
           (!node.input(2) || node.input(2)->constant->element_count() == w.dim(0));
  }
  if (!is_matmul(node)) return false;
  const auto config = cpu::dense::read_matmul_config(node);
  if (!config || config->trans_a) return false;
  const Tensor& w = *node.input(1)->constant;
  if (w.rank() != 2 || w.dtype() != DType::kF32) return false;
  const std::int64_t columns = config->trans_b ? w.dim(0) : w.dim(1);
  return cpu::dense::constant_column_bias(node, *config, columns).has_value();
}

Int8GemmLayer make_int8_gemm_layer(const float* w_rows, std::int64_t columns, std::int64_t depth,
                                   const quantized::ActivationQuantization& input, float alpha,
                                   const float* bias) {
  Int8GemmLayer layer;
  layer.columns = columns;
  layer.depth = depth;
  layer.padded_columns = round_up_to(std::max<std::int64_t>(columns, 1), kInt8ColumnMultiple);
  layer.padded_depth = round_up_to(std::max<std::int64_t>(depth, 1), kInt8DepthMultiple);
  layer.input = input;
  const quantized::RowQuantizedWeights rows =
      quantized::quantize_rows(w_rows, columns, depth, depth);
  layer.weights.assign(static_cast<std::size_t>(layer.padded_columns * layer.padded_depth), 0);
  layer.scales.resize(static_cast<std::size_t>(columns));
  layer.zero_point_sums.resize(static_cast<std::size_t>(columns));
  const std::int32_t signed_zero_point = input.zero_point - 128;
  for (std::int64_t c = 0; c < columns; ++c) {
    const std::int8_t* row = rows.values.data() + c * depth;
    std::copy(row, row + depth, layer.weights.begin() + c * layer.padded_depth);
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < depth; ++k) sum += row[k];
    const auto i = static_cast<std::size_t>(c);
    // The same expression as the CPU's epilogue (make_int8_epilogue), so the same float.
    layer.scales[i] = input.scale * (alpha * rows.scales[i]);
    layer.zero_point_sums[i] = signed_zero_point * sum;
  }
  if (bias) layer.bias.assign(bias, bias + columns);
  return layer;
}

Expected<Int8GemmLayer> make_int8_gemm_layer(const ir::Node& node) {
  if (!cuda_int8_applies(node)) {
    return unsupported(node.describe(), ": no CUDA int8 kernel (needs MatMul / FusedMatMul / Gemm ",
                       "with f32 data, a constant 2-D weight, A not transposed and a bias of one ",
                       "value per output column, or a 1-D / 2-D Conv of group 1 with explicit ",
                       "pads)");
  }
  VOXRT_ASSIGN_OR_RETURN(quantized::ActivationQuantization input,
                         quantized::read_input_quantization(node));
  const Tensor& w = *node.input(1)->constant;
  if (is_conv(node)) {  // [OC, C, K...]: already one row per output channel
    const std::int64_t out_channels = w.dim(0);
    const ir::Value* bias = node.input(2);
    return make_int8_gemm_layer(w.data<float>(), out_channels, w.element_count() / out_channels,
                                input, 1.0f, bias ? bias->constant->data<float>() : nullptr);
  }
  VOXRT_ASSIGN_OR_RETURN(cpu::dense::MatMulConfig config, cpu::dense::read_matmul_config(node));
  const std::int64_t depth = config.trans_b ? w.dim(1) : w.dim(0);
  const std::int64_t columns = config.trans_b ? w.dim(0) : w.dim(1);
  std::vector<float> by_column;
  if (!config.trans_b) {  // [K, N] -> one row of K per column
    by_column.resize(static_cast<std::size_t>(depth * columns));
    const float* wd = w.data<float>();
    for (std::int64_t k = 0; k < depth; ++k) {
      for (std::int64_t n = 0; n < columns; ++n)
        by_column[static_cast<std::size_t>(n * depth + k)] = wd[k * columns + n];
    }
  }
  const std::vector<float> bias = *cpu::dense::constant_column_bias(node, config, columns);
  return make_int8_gemm_layer(config.trans_b ? w.data<float>() : by_column.data(), columns, depth,
                              input, config.alpha, bias.empty() ? nullptr : bias.data());
}

Expected<Int8ConvGeometry> int8_conv_geometry(const ir::Node& node, const Dims& x, const Dims& y) {
  const Tensor& w = *node.input(1)->constant;
  const std::size_t spatial = static_cast<std::size_t>(w.rank()) - 2;
  if (x.size() != spatial + 2 || y.size() != spatial + 2 || x[1] != w.dim(1) || y[1] != w.dim(0) ||
      x[0] != y[0]) {
    return invalid_argument(node.describe(), ": int8 convolution expected input [N, ", w.dim(1),
                            ", ...] and output [N, ", w.dim(0), ", ...] of rank ", spatial + 2,
                            ", found ", dims_to_string(x), " and ", dims_to_string(y));
  }
  const ConvAttrs attrs = read_conv_attrs(node, spatial);
  Int8ConvGeometry g;
  g.batch = x[0];
  g.channels = x[1];
  const std::size_t last = spatial - 1;  // the width axis
  g.width = x.back();
  g.out_w = y.back();
  g.kernel_w = w.dim(w.rank() - 1);
  g.stride_w = attrs.strides[last];
  g.dilation_w = attrs.dilations[last];
  g.pad_left = attrs.pads[last];
  if (spatial == 2) {
    g.height = x[2];
    g.out_h = y[2];
    g.kernel_h = w.dim(2);
    g.stride_h = attrs.strides[0];
    g.dilation_h = attrs.dilations[0];
    g.pad_top = attrs.pads[0];
  }
  return g;
}

std::vector<std::int8_t> im2col_signed(const float* x, const Int8ConvGeometry& g,
                                       const Int8GemmLayer& layer) {
  const std::int8_t zero = quantize_activation_signed(0.0f, layer.input);
  std::vector<std::int8_t> out(static_cast<std::size_t>(g.rows() * layer.padded_depth), 0);
  for (std::int64_t m = 0; m < g.rows(); ++m) {
    const std::int64_t ox = m % g.out_w, oy = m / g.out_w % g.out_h, n = m / (g.out_w * g.out_h);
    for (std::int64_t k = 0; k < layer.depth; ++k) {
      const std::int64_t kx = k % g.kernel_w, ky = k / g.kernel_w % g.kernel_h,
                         c = k / (g.kernel_w * g.kernel_h);
      const std::int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
      const std::int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
      const bool inside = iy >= 0 && iy < g.height && ix >= 0 && ix < g.width;
      out[static_cast<std::size_t>(m * layer.padded_depth + k)] =
          inside ? quantize_activation_signed(
                       x[((n * g.channels + c) * g.height + iy) * g.width + ix], layer.input)
                 : zero;
    }
  }
  return out;
}

std::int8_t quantize_activation_signed(float x, const quantized::ActivationQuantization& q) {
  return static_cast<std::int8_t>(static_cast<int>(quantized::quantize_activation(x, q)) - 128);
}

std::vector<std::int8_t> quantize_rows_signed(const float* x, std::int64_t rows,
                                              const Int8GemmLayer& layer) {
  std::vector<std::int8_t> out(static_cast<std::size_t>(rows * layer.padded_depth), 0);
  for (std::int64_t m = 0; m < rows; ++m) {
    for (std::int64_t k = 0; k < layer.depth; ++k) {
      out[static_cast<std::size_t>(m * layer.padded_depth + k)] =
          quantize_activation_signed(x[m * layer.depth + k], layer.input);
    }
  }
  return out;
}

std::vector<std::int32_t> int8_gemm_int32_reference(const std::int8_t* a, std::int64_t rows,
                                                    const Int8GemmLayer& layer) {
  std::vector<std::int32_t> acc(static_cast<std::size_t>(rows * layer.padded_columns), 0);
  for (std::int64_t m = 0; m < rows; ++m) {
    const std::int8_t* x = a + m * layer.padded_depth;
    for (std::int64_t c = 0; c < layer.padded_columns; ++c) {
      const std::int8_t* w = layer.weights.data() + c * layer.padded_depth;
      std::int32_t sum = 0;
      for (std::int64_t k = 0; k < layer.padded_depth; ++k) sum += std::int32_t{x[k]} * w[k];
      acc[static_cast<std::size_t>(m * layer.padded_columns + c)] = sum;
    }
  }
  return acc;
}

float int8_dequantize(std::int32_t acc, const Int8GemmLayer& layer, std::int64_t column) {
  const auto c = static_cast<std::size_t>(column);
  const float centred = static_cast<float>(acc - layer.zero_point_sums[c]);
  return std::fma(centred, layer.scales[c], layer.bias.empty() ? 0.0f : layer.bias[c]);
}

}  // namespace voxrt::backends::cuda
