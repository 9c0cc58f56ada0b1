// AVX2/FMA building blocks of the packed recurrent tactic: 8-lane exp, sigmoid and tanh accurate
// to a few ulp (Cephes polynomials) and the ONNX activations on 8 lanes.
// The library is built for baseline x86-64, so every function that uses AVX2 carries
// VOXRT_AVX2 and is only called after packed_available() said the CPU has AVX2 and FMA.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/recurrent/recurrent_spec.h"

namespace voxrt::backends::cpu::recurrent {

VOXRT_AVX2 inline __m256 exp256(__m256 x) {
  // Range: e^-87.3 is still a normal float and e^88.3 is below FLT_MAX, so 2^n below never
  // needs a subnormal or infinite exponent.
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i exponent =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(exponent));
}

VOXRT_AVX2 inline __m256 sigmoid256(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(one, _mm256_add_ps(one, exp256(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}

VOXRT_AVX2 inline __m256 tanh256(__m256 x) {
  // Small |x|: odd polynomial (no cancellation); otherwise 1 - 2 / (e^{2|x|} + 1) with the sign.
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256 abs_x = _mm256_andnot_ps(sign_mask, x);
  const __m256 s = _mm256_mul_ps(x, x);
  __m256 p = _mm256_set1_ps(-5.70498872745e-3f);
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(2.06390887954e-2f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-5.37397155531e-2f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(1.33314422036e-1f));
  p = _mm256_fmadd_ps(p, s, _mm256_set1_ps(-3.33332819422e-1f));
  const __m256 small = _mm256_fmadd_ps(_mm256_mul_ps(p, s), x, x);
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 e = exp256(_mm256_add_ps(abs_x, abs_x));
  const __m256 large_abs =
      _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
  const __m256 large = _mm256_or_ps(large_abs, _mm256_and_ps(sign_mask, x));
  return _mm256_blendv_ps(large, small, _mm256_cmp_ps(abs_x, _mm256_set1_ps(0.625f), _CMP_LT_OQ));
}

VOXRT_AVX2 inline __m256 apply_activation256(const Activation& activation, __m256 x) {
  const __m256 zero = _mm256_setzero_ps();
  const __m256 alpha = _mm256_set1_ps(activation.alpha);
  const __m256 beta = _mm256_set1_ps(activation.beta);
  switch (activation.kind) {
    case ActivationKind::kSigmoid: return sigmoid256(x);
    case ActivationKind::kTanh: return tanh256(x);
    case ActivationKind::kRelu: return _mm256_max_ps(x, zero);
    case ActivationKind::kHardSigmoid:
      return _mm256_min_ps(_mm256_set1_ps(1.0f),
                           _mm256_max_ps(zero, _mm256_fmadd_ps(alpha, x, beta)));
    case ActivationKind::kLeakyRelu:
      return _mm256_blendv_ps(_mm256_mul_ps(alpha, x), x, _mm256_cmp_ps(x, zero, _CMP_GE_OQ));
    case ActivationKind::kAffine: return _mm256_fmadd_ps(alpha, x, beta);
    case ActivationKind::kScaledTanh: return _mm256_mul_ps(alpha, tanh256(_mm256_mul_ps(beta, x)));
    case ActivationKind::kElu: {
      const __m256 negative = _mm256_mul_ps(alpha, _mm256_sub_ps(exp256(x), _mm256_set1_ps(1.0f)));
      return _mm256_blendv_ps(negative, x, _mm256_cmp_ps(x, zero, _CMP_GE_OQ));
    }
    case ActivationKind::kSoftsign: {
      const __m256 abs_x = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x);
      return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), abs_x));
    }
    case ActivationKind::kThresholdedRelu:
      return _mm256_and_ps(x, _mm256_cmp_ps(x, alpha, _CMP_GT_OQ));
    case ActivationKind::kSoftplus: break;
  }
  // Rare activations without a vector form: lane by lane.
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, x);
  for (float& lane : lanes) lane = activation.apply(lane);
  return _mm256_load_ps(lanes);
}

}  // namespace voxrt::backends::cpu::recurrent

namespace voxrt::backends::cpu::recurrent {

// data[i] = activation(clip(data[i])) for i < count; 8 lanes at a time, scalar tail.
VOXRT_AVX2 inline void activate_span_avx2(const RecurrentSpec& spec, const Activation& activation,
                                          float* data, std::int64_t count) {
  std::int64_t i = 0;
  const __m256 low = _mm256_set1_ps(-spec.clip), high = _mm256_set1_ps(spec.clip);
  for (; i + 8 <= count; i += 8) {
    __m256 v = _mm256_loadu_ps(data + i);
    if (spec.has_clip) v = _mm256_min_ps(_mm256_max_ps(v, low), high);
    _mm256_storeu_ps(data + i, apply_activation256(activation, v));
  }
  for (; i < count; ++i) data[i] = activation.apply(spec.clip_value(data[i]));
}

}  // namespace voxrt::backends::cpu::recurrent
