// A fused dense op's activation (and clamp) on 16 lanes, for the AVX-512 dense kernels. Only
// called after cpu_has_avx512f() said yes.
#pragma once

#include "backends/cpu/avx512_math.h"
#include "backends/cpu/dense/dense_common.h"

namespace voxrt::backends::cpu::dense {

VOXRT_AVX512 inline __m512 activate(const Activation& act, __m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512 zero = _mm512_setzero_ps();
  switch (act.kind) {
    case ActivationKind::kNone: break;
    case ActivationKind::kRelu: x = _mm512_mask_max_ps(x, kAll, x, zero); break;
    case ActivationKind::kClip:
      x = _mm512_mask_max_ps(x, kAll, x, _mm512_set1_ps(act.alpha));
      x = _mm512_mask_min_ps(x, kAll, x, _mm512_set1_ps(act.beta));
      break;
    case ActivationKind::kLeakyRelu:
      x = _mm512_mask_mul_ps(x, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), x,
                             _mm512_set1_ps(act.alpha));
      break;
    case ActivationKind::kSigmoid: x = sigmoid512(x); break;
    case ActivationKind::kTanh: x = tanh512(x); break;
    case ActivationKind::kGeluErf:
      x = _mm512_mul_ps(
          _mm512_mul_ps(_mm512_set1_ps(0.5f), x),
          _mm512_add_ps(_mm512_set1_ps(1.0f),
                        erf512(_mm512_mul_ps(x, _mm512_set1_ps(0.70710678118654752f)))));
      break;
    case ActivationKind::kSilu: x = _mm512_mul_ps(x, sigmoid512(x)); break;
  }
  if (act.has_clamp) {
    x = _mm512_mask_max_ps(x, kAll, x, _mm512_set1_ps(act.clamp_min));
    x = _mm512_mask_min_ps(x, kAll, x, _mm512_set1_ps(act.clamp_max));
  }
  return x;
}

// activate() over `count` floats in place (a masked tail): for kernels whose GEMM leaves the
// activation to a pass of its own. Its results differ from apply_activation()'s scalar ones in
// the last bits of the transcendental activations.
VOXRT_AVX512 inline void activate_span(const Activation& act, float* data, std::int64_t count) {
  if (act.kind == ActivationKind::kNone && !act.has_clamp) return;
  std::int64_t i = 0;
  for (; i + 16 <= count; i += 16)
    _mm512_storeu_ps(data + i, activate(act, _mm512_loadu_ps(data + i)));
  if (i < count) {
    const auto tail = static_cast<__mmask16>((1u << (count - i)) - 1);
    _mm512_mask_storeu_ps(data + i, tail, activate(act, _mm512_maskz_loadu_ps(tail, data + i)));
  }
}

}  // namespace voxrt::backends::cpu::dense
