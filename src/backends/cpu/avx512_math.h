// 16-lane AVX-512 building blocks shared by the CPU kernels: lane sums and maxima, exp. The
// library is built for baseline x86-64: every function here carries VOXRT_AVX512 and is only
// called after cpu_has_avx512f() said yes.
#pragma once

#include <immintrin.h>

#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu {

// The sum of the 16 lanes by in-register shuffles. The masked forms (all lanes) name their
// pass-through operand: GCC 12's unmasked ones, _mm512_reduce_add_ps too, pass an undefined
// vector that trips its own -Wuninitialized.
VOXRT_AVX512 inline float sum_lanes(__m512 v) {
  constexpr __mmask16 kAll = 0xffff;
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4e));  // 256-bit halves
  v = _mm512_add_ps(v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xb1));  // 128-bit quarters
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0x4e));        // 64-bit pairs
  v = _mm512_add_ps(v, _mm512_mask_permute_ps(v, kAll, v, 0xb1));        // neighbours
  return _mm512_cvtss_f32(v);
}

// The largest of the 16 lanes (NaN lanes may or may not win), the same way.
VOXRT_AVX512 inline float max_lanes(__m512 v) {
  constexpr __mmask16 kAll = 0xffff;
  v = _mm512_mask_max_ps(v, kAll, v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0x4e));
  v = _mm512_mask_max_ps(v, kAll, v, _mm512_mask_shuffle_f32x4(v, kAll, v, v, 0xb1));
  v = _mm512_mask_max_ps(v, kAll, v, _mm512_mask_permute_ps(v, kAll, v, 0x4e));
  v = _mm512_mask_max_ps(v, kAll, v, _mm512_mask_permute_ps(v, kAll, v, 0xb1));
  return _mm512_cvtss_f32(v);
}

// e^x with a few ulp of error (Cephes polynomial on x - n ln2). Exactly 0 below -87.3 (so a -inf
// score weighs nothing, as in Softmax), e^88.3 at most above; NaN stays NaN.
VOXRT_AVX512 inline __m512 exp512(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-87.3f), _CMP_LT_OQ);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  __m512 r = _mm512_mask_max_ps(x, kAll, x, _mm512_set1_ps(-87.3f));
  r = _mm512_mask_min_ps(r, kAll, r, _mm512_set1_ps(88.3f));
  const __m512 scaled = _mm512_mul_ps(r, _mm512_set1_ps(1.44269504088896341f));
  const __m512 n = _mm512_mask_roundscale_ps(scaled, kAll, scaled,
                                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), r);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 y = _mm512_set1_ps(1.9875691500e-4f);
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.3981999507e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(8.3334519073e-3f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(4.1665795894e-2f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(1.6666665459e-1f));
  y = _mm512_fmadd_ps(y, r, _mm512_set1_ps(5.0000001201e-1f));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  y = _mm512_mask_scalef_ps(y, kAll, y, n);  // y * 2^n
  y = _mm512_mask_mov_ps(y, underflow, _mm512_setzero_ps());
  return _mm512_mask_mov_ps(y, nan, x);
}

VOXRT_AVX512 inline __m512 sigmoid512(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}

// tanh(x) = 2 sigmoid(2x) - 1 (absolute error ~1e-7 near 0, where the two terms cancel).
VOXRT_AVX512 inline __m512 tanh512(__m512 x) {
  const __m512 two = _mm512_set1_ps(2.0f);
  return _mm512_sub_ps(_mm512_mul_ps(two, sigmoid512(_mm512_mul_ps(two, x))), _mm512_set1_ps(1.0f));
}

// erf(x), absolute error below 1e-6: the same two pieces as elementwise::fast_erf, |x| <= 1 the
// Maclaurin series in x^2, beyond it Abramowitz-Stegun 7.1.28.
VOXRT_AVX512 inline __m512 erf512(__m512 x) {
  constexpr __mmask16 kAll = 0xffff;
  const __m512 zero = _mm512_setzero_ps();
  const __m512 a = _mm512_mask_max_ps(x, kAll, x, _mm512_sub_ps(zero, x));
  const __m512 t = _mm512_mul_ps(a, a);
  const float series[] = {1.0f / 76204800.0f,
                          -1.0f / 6894720.0f,
                          1.0f / 685440.0f,
                          -1.0f / 75600.0f,
                          1.0f / 9360.0f,
                          -1.0f / 1320.0f,
                          1.0f / 216.0f,
                          -1.0f / 42.0f,
                          1.0f / 10.0f,
                          -1.0f / 3.0f,
                          1.0f};
  __m512 s = _mm512_set1_ps(series[0]);
  for (int i = 1; i < 11; ++i) s = _mm512_fmadd_ps(s, t, _mm512_set1_ps(series[i]));
  const __m512 small = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(1.1283791670955126f), a), s);
  const __m512 b = _mm512_mask_min_ps(a, kAll, a, _mm512_set1_ps(6.0f));
  const float poly[] = {0.0000430638f, 0.0002765672f, 0.0001520143f, 0.0092705272f,
                        0.0422820123f, 0.0705230784f, 1.0f};
  __m512 p = _mm512_set1_ps(poly[0]);
  for (int i = 1; i < 7; ++i) p = _mm512_fmadd_ps(p, b, _mm512_set1_ps(poly[i]));
  for (int i = 0; i < 4; ++i) p = _mm512_mul_ps(p, p);  // ^16
  const __m512 large = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(1.0f), p));
  const __mmask16 is_small = _mm512_cmp_ps_mask(a, _mm512_set1_ps(1.0f), _CMP_LE_OQ);
  const __m512 r = _mm512_mask_mov_ps(large, is_small, small);
  const __m512 signed_r = _mm512_mask_sub_ps(r, _mm512_cmp_ps_mask(x, zero, _CMP_LT_OQ), zero, r);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(signed_r, nan, x);
}

}  // namespace voxrt::backends::cpu
