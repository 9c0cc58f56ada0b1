// The INT8 number formats of the CPU backend, shared by the builder (which chooses them) and
// the quantized kernels (which apply them):
//  - activations per tensor as unsigned 8-bit with a zero point: q = clamp(round(x * (1 /
//    scale)) + zero_point, 0, 255), x ~ (q - zero_point) * scale. Symmetric ranges use zero_point
//    128; asymmetric ones (a ReLU's output) spend all 256 levels on [min, max]. Unsigned because
//    VNNI's vpdpbusd multiplies unsigned by signed bytes;
//  - weights per output channel, symmetric signed 8-bit in [-127, 127]: w ~ q * scale[channel],
//    scale = max |w| / 127 over the channel;
//  - products accumulated exactly in int32; the zero point is removed with the weights' column
//    sums, then one FP32 multiply by scale_x * scale_w[channel] and the FP32 bias.
// Rounding is to nearest, ties to even (the CPU's default mode), in every kernel and reference.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"

namespace voxrt::backends::cpu::quantized {

// Node attributes written by the builder on a layer marked int8 (backends::kLayerPrecisionAttr):
// the calibrated quantization of its activation input (input 0).
inline constexpr char kInputScaleAttr[] = "voxrt.int8.input_scale";
inline constexpr char kInputZeroPointAttr[] = "voxrt.int8.input_zero_point";
// The observed range of that input during calibration (for inspect).
inline constexpr char kInputRangeAttr[] = "voxrt.int8.input_range";

struct ActivationQuantization {
  float scale = 1.0f;
  std::int32_t zero_point = 0;  // 0..255

  // Symmetric around zero with |x| <= threshold representable: zero point 128.
  static ActivationQuantization symmetric(double threshold);
  // [lo, hi] widened to contain 0 (so that zero, a convolution's padding, is exact).
  static ActivationQuantization asymmetric(double lo, double hi);
  // The representable range.
  float lowest() const { return (0 - zero_point) * scale; }
  float highest() const { return (255 - zero_point) * scale; }
};

// The node's calibrated input quantization, or an error naming the node when it has none.
Expected<ActivationQuantization> read_input_quantization(const ir::Node& node);

// out[i] = clamp(round(in[i] * (1 / scale)) + zero_point, 0, 255) (NaN -> 0); vectorized where
// the CPU allows, with the same results as the scalar form.
void quantize_activations(const float* in, std::int64_t count, const ActivationQuantization& q,
                          std::uint8_t* out);
std::uint8_t quantize_activation(float x, const ActivationQuantization& q);

// Symmetric per-row weights: `rows` rows of `depth` values (row r at w + r * row_stride).
struct RowQuantizedWeights {
  std::int64_t rows = 0, depth = 0;
  std::vector<std::int8_t> values;  // [rows][depth]
  std::vector<float> scales;        // [rows]; 1 for an all-zero row
};
RowQuantizedWeights quantize_rows(const float* w, std::int64_t rows, std::int64_t depth,
                                  std::int64_t row_stride);

}  // namespace voxrt::backends::cpu::quantized
