// The recurrent product of the packed tactics with R stored in INT8 (recurrent_packing.h): the
// step's operand rows (h, or r (.) h for a GRU's candidate) are quantized per row on the fly,
// symmetric (zero point 128, scale max |row| / 127: a row changes every step, and its own scale
// keeps the resolution a fixed range would lose on small states), then multiplied by the INT8
// panels with VNNI (int8_product.h). Gates, cell and states stay FP32.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/quantized/int8_product.h"
#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cpu/recurrent/recurrent_packing.h"

namespace voxrt::backends::cpu::recurrent {

// The quantization a row of `depth` values gets: symmetric around its largest magnitude.
quantized::ActivationQuantization dynamic_row_quantization(const float* row, std::int64_t depth);

// Rows quantized for one phase, each `stride` bytes (the panels' quads * 4; the padding is the
// zero point), with their scales.
struct QuantizedRows {
  std::vector<std::uint8_t> bytes;
  std::vector<float> scales;
  std::int64_t stride = 0;
  const std::uint8_t* row(int m) const { return bytes.data() + m * stride; }
};
void quantize_state_rows(const float* const* a, int rows, std::int64_t depth,
                         std::int64_t padded_depth, QuantizedRows& out);

// out[m][g * 8 + lane] = (row m of q) . (unit block `block`'s weights of gate g), dequantized:
// float(sum - 128 x row sum) x (row scale x weight scale).
void panels_multiply_int8(const PackedPanels& panels, std::int64_t block, const QuantizedRows& q,
                          int rows, float* const* out);

}  // namespace voxrt::backends::cpu::recurrent
