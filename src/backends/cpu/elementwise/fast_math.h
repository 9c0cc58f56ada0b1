// Branch-free float approximations that GCC can vectorize (plain arithmetic, selects and bit
// casts; no libm calls), for the vectorized tactic. Accuracy, checked by unit_elementwise
// against std:: over dense grids: exp ~2 ulp; sigmoid, tanh and erf < 1e-6 absolute error.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

namespace voxrt::backends::cpu::elementwise {

// Cephes expf: exp(x) = 2^n * exp(r), |r| <= ln2/2, with a degree-6 polynomial for exp(r).
inline float fast_exp(float x) {
  constexpr float kMaxInput = 88.72283f;   // exp overflows above this
  constexpr float kMinInput = -87.33654f;  // below this the result is denormal; we return 0
  // NaN goes through the polynomial as 0 (and comes out as NaN below): converting NaN to int
  // is undefined behaviour (UBSan under clang reports it).
  const float finite_or_zero = x != x ? 0.0f : x;
  const float clamped = x > kMaxInput ? kMaxInput : (x < kMinInput ? kMinInput : finite_or_zero);
  const float scaled = clamped * 1.44269504088896341f;
  const auto n = static_cast<std::int32_t>(scaled + (scaled >= 0.0f ? 0.5f : -0.5f));
  const float fn = static_cast<float>(n);
  float r = clamped - fn * 0.693359375f;
  r = r + fn * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  // 2^n in two halves so that n = 128 and n = -126 stay representable.
  const std::int32_t n1 = n >> 1;
  const std::int32_t n2 = n - n1;
  const float scale1 = std::bit_cast<float>(static_cast<std::uint32_t>(n1 + 127) << 23);
  const float scale2 = std::bit_cast<float>(static_cast<std::uint32_t>(n2 + 127) << 23);
  float result = y * scale1 * scale2;
  result = x > kMaxInput ? std::numeric_limits<float>::infinity() : result;
  result = x < kMinInput ? 0.0f : result;
  return x != x ? x : result;
}

inline float fast_sigmoid(float x) {
  return 1.0f / (1.0f + fast_exp(-x));
}

inline float fast_tanh(float x) {
  const float a = x < 0.0f ? -x : x;
  // Near zero (e - 1) / (e + 1) cancels; the odd series is exact to float there.
  const float t = a * a;
  const float series = a * (1.0f + t * (-1.0f / 3.0f + t * (2.0f / 15.0f + t * (-17.0f / 315.0f))));
  const float e = fast_exp(2.0f * (a > 9.0f ? 9.0f : a));
  const float big = 1.0f - 2.0f / (e + 1.0f);
  const float r = a < 0.0625f ? series : big;
  const float signed_r = x < 0.0f ? -r : r;
  return x != x ? x : signed_r;
}

// |x| <= 1: Maclaurin series of erf in x^2 (alternating, no cancellation); |x| > 1:
// Abramowitz-Stegun 7.1.28, 1 - 1/(1 + a1 x + ... + a6 x^6)^16, error <= 3e-7.
inline float fast_erf(float x) {
  const float a = x < 0.0f ? -x : x;
  const float t = a * a;
  float s = 1.0f / 76204800.0f;
  s = s * t - 1.0f / 6894720.0f;
  s = s * t + 1.0f / 685440.0f;
  s = s * t - 1.0f / 75600.0f;
  s = s * t + 1.0f / 9360.0f;
  s = s * t - 1.0f / 1320.0f;
  s = s * t + 1.0f / 216.0f;
  s = s * t - 1.0f / 42.0f;
  s = s * t + 1.0f / 10.0f;
  s = s * t - 1.0f / 3.0f;
  s = s * t + 1.0f;
  const float small = 1.1283791670955126f * a * s;
  const float b = a > 6.0f ? 6.0f : a;
  float p = 0.0000430638f;
  p = p * b + 0.0002765672f;
  p = p * b + 0.0001520143f;
  p = p * b + 0.0092705272f;
  p = p * b + 0.0422820123f;
  p = p * b + 0.0705230784f;
  p = p * b + 1.0f;
  p = p * p;  // ^2
  p = p * p;  // ^4
  p = p * p;  // ^8
  p = p * p;  // ^16
  const float large = 1.0f - 1.0f / p;
  const float r = a <= 1.0f ? small : large;
  const float signed_r = x < 0.0f ? -r : r;
  return x != x ? x : signed_r;
}

}  // namespace voxrt::backends::cpu::elementwise
