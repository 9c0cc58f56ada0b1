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

}  // namespace voxrt::backends::cpu::dense
