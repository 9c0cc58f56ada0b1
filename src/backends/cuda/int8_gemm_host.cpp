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

// The bias as one float per column, beta folded in (Gemm's C of [N], [1, N] or one value;
// FusedMatMul's [N]); nullopt for a C the epilogue does not take.
std::optional<std::vector<float>> column_bias(const ir::Node& node,
                                              const cpu::dense::MatMulConfig& config,
                                              std::int64_t columns) {
  std::vector<float> bias;
  if (!config.has_c) return bias;
  const ir::Value* value = node.input(2);
  if (!value || !value->is_constant() || value->dtype != DType::kF32) return std::nullopt;
  const Tensor& t = *value->constant;
  const bool row =
      t.element_count() == columns && (t.rank() == 1 || (t.rank() == 2 && t.dim(0) == 1));
  if (!row && t.element_count() != 1) return std::nullopt;
  for (std::int64_t c = 0; c < columns; ++c)
    bias.push_back(config.beta * t.data<float>()[row ? c : 0]);
  return bias;
}

bool is_matmul(const ir::Node& node) {
  return node.op == ir::OpKind::kMatMul || node.op == ir::OpKind::kFusedMatMul ||
         node.op == ir::OpKind::kGemm;
}

}  // namespace

bool cuda_int8_applies(const ir::Node& node) {
  // The CPU's INT8 candidates (the builder calibrates and measures on the CPU) that are GEMMs.
  if (!is_matmul(node) || !quantized::dense_int8_applies(node)) return false;
  if (!read_activation(node).has_value()) return false;
  const auto config = cpu::dense::read_matmul_config(node);
  if (!config || config->trans_a) return false;
  const Tensor& w = *node.input(1)->constant;
  if (w.rank() != 2 || w.dtype() != DType::kF32) return false;
  const std::int64_t columns = config->trans_b ? w.dim(0) : w.dim(1);
  return column_bias(node, *config, columns).has_value();
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
                       "value per output column)");
  }
  VOXRT_ASSIGN_OR_RETURN(quantized::ActivationQuantization input,
                         quantized::read_input_quantization(node));
  VOXRT_ASSIGN_OR_RETURN(cpu::dense::MatMulConfig config, cpu::dense::read_matmul_config(node));
  const Tensor& w = *node.input(1)->constant;
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
  const std::vector<float> bias = *column_bias(node, config, columns);
  return make_int8_gemm_layer(config.trans_b ? w.data<float>() : by_column.data(), columns, depth,
                              input, config.alpha, bias.empty() ? nullptr : bias.data());
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
