#include "backends/cpu/quantized/int8_quantization.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu::quantized {
namespace {

// Scales below this would overflow 1 / scale; a range this small is all but zero anyway.
constexpr double kMinScale = 1e-30;

VOXRT_AVX512 void quantize_avx512(const float* in, std::int64_t count, float inverse_scale,
                                  float zero_point, std::uint8_t* out, std::int64_t& done) {
  const __m512 inverse = _mm512_set1_ps(inverse_scale);
  const __m512 zero = _mm512_set1_ps(zero_point);
  const __m512 low = _mm512_setzero_ps(), high = _mm512_set1_ps(255.0f);
  // The masked forms (all lanes) name their pass-through operand: GCC 12's unmasked ones pass
  // an undefined vector that trips its own -Wmaybe-uninitialized (as in avx512_math.h).
  constexpr __mmask16 kAll = 0xffff;
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    __m512 v = _mm512_mul_ps(_mm512_loadu_ps(in + i), inverse);
    v = _mm512_mask_roundscale_ps(v, kAll, v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    v = _mm512_add_ps(v, zero);
    // max(v, 0) gives 0 for NaN (the second operand), as fmaxf does in the scalar form.
    v = _mm512_mask_max_ps(v, kAll, v, low);
    v = _mm512_mask_min_ps(v, kAll, v, high);
    _mm512_mask_cvtepi32_storeu_epi8(out + i, kAll,
                                     _mm512_mask_cvtps_epi32(_mm512_setzero_si512(), kAll, v));
  }
  done = i;
}

}  // namespace

ActivationQuantization ActivationQuantization::symmetric(double threshold) {
  ActivationQuantization q;
  q.scale = static_cast<float>(std::max(std::fabs(threshold) / 127.0, kMinScale));
  q.zero_point = 128;
  return q;
}

ActivationQuantization ActivationQuantization::asymmetric(double lo, double hi) {
  lo = std::min(lo, 0.0);
  hi = std::max(hi, 0.0);
  ActivationQuantization q;
  q.scale = static_cast<float>(std::max((hi - lo) / 255.0, kMinScale));
  q.zero_point = static_cast<std::int32_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.0, 255.0));
  return q;
}

Expected<ActivationQuantization> read_input_quantization(const ir::Node& node) {
  const float scale = node.attrs.get_float(kInputScaleAttr, 0.0f);
  const std::int64_t zero_point = node.attrs.get_int(kInputZeroPointAttr, -1);
  if (!(scale > 0.0f) || !std::isfinite(scale) || zero_point < 0 || zero_point > 255) {
    return invalid_argument(node.describe(), ": an int8 layer needs its calibrated input ",
                            "quantization (", kInputScaleAttr, " > 0 and ", kInputZeroPointAttr,
                            " in 0..255), found scale ", scale, " and zero point ", zero_point);
  }
  return ActivationQuantization{scale, static_cast<std::int32_t>(zero_point)};
}

std::uint8_t quantize_activation(float x, const ActivationQuantization& q) {
  const float inverse = 1.0f / q.scale;
  float v = std::nearbyintf(x * inverse) + static_cast<float>(q.zero_point);
  v = std::fminf(std::fmaxf(v, 0.0f), 255.0f);
  return static_cast<std::uint8_t>(v);
}

void quantize_activations(const float* in, std::int64_t count, const ActivationQuantization& q,
                          std::uint8_t* out) {
  std::int64_t i = 0;
  if (cpu_has_avx512f()) {
    quantize_avx512(in, count, 1.0f / q.scale, static_cast<float>(q.zero_point), out, i);
  }
  for (; i < count; ++i) out[i] = quantize_activation(in[i], q);
}

RowQuantizedWeights quantize_rows(const float* w, std::int64_t rows, std::int64_t depth,
                                  std::int64_t row_stride) {
  RowQuantizedWeights q;
  q.rows = rows;
  q.depth = depth;
  q.values.resize(static_cast<std::size_t>(rows * depth));
  q.scales.resize(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = w + r * row_stride;
    float max_abs = 0;
    for (std::int64_t k = 0; k < depth; ++k) max_abs = std::max(max_abs, std::fabs(row[k]));
    const float scale = max_abs > 0 && std::isfinite(max_abs) ? max_abs / 127.0f : 1.0f;
    const float inverse = 1.0f / scale;
    q.scales[static_cast<std::size_t>(r)] = scale;
    for (std::int64_t k = 0; k < depth; ++k) {
      const float v = std::fminf(std::fmaxf(std::nearbyintf(row[k] * inverse), -127.0f), 127.0f);
      q.values[static_cast<std::size_t>(r * depth + k)] = static_cast<std::int8_t>(v);
    }
  }
  return q;
}

}  // namespace voxrt::backends::cpu::quantized
