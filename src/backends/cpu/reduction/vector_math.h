// f32 building blocks of the reduction family's vectorized tactic: plain loops written so that
// the compiler vectorizes them (independent lanes, no branches), and a polynomial exp that
// vectorizes where std::exp does not.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

#include "backends/cpu/cpu_backend.h"

namespace voxrt::backends::cpu::reduction {

// Independent partial results per row: enough to fill two AVX registers and to break the
// dependency chain of a sequential f32 sum (which also makes the sum more accurate).
inline constexpr int kLanes = 16;

// e^x with about 1 ulp error (Cephes expf), branch-free so loops over it vectorize. Inputs below
// -87 give ~1e-38 instead of a denormal or 0, inputs above 88 give ~1.6e38 instead of inf: both
// are harmless in softmax, where arguments are x - max <= 0.
inline float exp_approx(float x) {
  x = std::fmin(std::fmax(x, -87.0f), 88.0f);
  // Round x / ln2 to nearest with the 1.5 * 2^23 trick (no SSE4.1 roundps needed).
  float n = x * 1.44269504088896341f;
  n = (n + 12582912.0f) - 12582912.0f;
  // r = x - n ln2, with ln2 split in two so that r keeps full precision.
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float y = p * r * r + r + 1.0f;
  const std::int32_t biased_exponent = static_cast<std::int32_t>(n) + 127;
  return y * std::bit_cast<float>(biased_exponent << 23);
}

inline float row_max(const float* x, std::int64_t n) {
  float lanes[kLanes];
  for (float& lane : lanes) lane = -INFINITY;
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = x[i + l] > lanes[l] ? x[i + l] : lanes[l];
  }
  for (; i < n; ++i) lanes[0] = x[i] > lanes[0] ? x[i] : lanes[0];
  float best = lanes[0];
  for (float lane : lanes) best = lane > best ? lane : best;
  return best;
}

inline float row_sum(const float* x, std::int64_t n) {
  float lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += x[i + l];
  }
  for (; i < n; ++i) lanes[0] += x[i];
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

struct Deviations {
  float sum = 0.0f;          // sum of (x - center)
  float sum_squares = 0.0f;  // sum of (x - center)^2
};

// The second pass of a two-pass variance. One-pass E[x^2] - E[x]^2 loses every digit when
// |mean| >> std; the sum of deviations also corrects the rounding error of the first pass's
// mean ("corrected two-pass", Chan, Golub & LeVeque).
inline Deviations row_deviations(const float* x, std::int64_t n, float center) {
  float sums[kLanes] = {};
  float squares[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const float d = x[i + l] - center;
      sums[l] += d;
      squares[l] += d * d;
    }
  }
  for (; i < n; ++i) {
    const float d = x[i] - center;
    sums[0] += d;
    squares[0] += d * d;
  }
  Deviations total;
  for (int l = 0; l < kLanes; ++l) {
    total.sum += sums[l];
    total.sum_squares += squares[l];
  }
  return total;
}

}  // namespace voxrt::backends::cpu::reduction
