// split_tf32_host: hi keeps TF32's 10 mantissa bits (the low 13 are zero), hi + lo is the value
// exactly, |lo| is at most half a TF32 ulp; and A_lo*B_hi + A_hi*B_lo + A_hi*B_hi with every
// factor rounded to TF32 (what the tensor cores multiply) is as close to the exact dot product as
// an FP32 one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backends/cuda/split_tf32_gemm.h"

namespace voxrt::backends::cuda {
namespace {

std::uint32_t bits_of(float v) {
  std::uint32_t b = 0;
  std::memcpy(&b, &v, 4);
  return b;
}

float tf32(float v) {
  std::vector<float> hi, lo;
  split_tf32_host(std::span<const float>(&v, 1), hi, lo);
  return hi[0];
}

TEST(SplitTf32, HalvesAreExactAndTf32Representable) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mantissa(-1.0f, 1.0f);
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f,
                               -1.5f,
                               1.0f + 1.0f / 4096.0f,
                               std::numeric_limits<float>::denorm_min(),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 10000; ++i)
    values.push_back(std::ldexp(mantissa(rng), static_cast<int>(rng() % 200) - 100));
  std::vector<float> hi, lo;
  split_tf32_host(values, hi, lo);
  ASSERT_EQ(hi.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const float v = values[i];
    if (std::isinf(v)) {
      EXPECT_EQ(hi[i], v);
      continue;
    }
    EXPECT_EQ(bits_of(hi[i]) & 0x1fffu, 0u) << v;
    EXPECT_EQ(hi[i] + lo[i], v) << v;
    // Half a TF32 ulp; below FLT_MIN the ulp is that of the smallest normal exponent.
    EXPECT_LE(std::fabs(lo[i]),
              std::ldexp(std::max(std::fabs(v), std::numeric_limits<float>::min()), -11))
        << v;
  }
  // Rounding up past FLT_MAX would give infinity: such values are truncated instead.
  EXPECT_EQ(bits_of(tf32(std::numeric_limits<float>::max())), 0x7f7fe000u);
  // Ties round away from zero, as cvt.rna.tf32.f32 does on the device.
  EXPECT_EQ(tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(tf32(-(1.0f + std::ldexp(1.0f, -11))), -(1.0f + std::ldexp(1.0f, -10)));
}

TEST(SplitTf32, ThreeProductsAreAsAccurateAsFp32) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  constexpr int kLength = 2048;
  std::vector<float> a(kLength), b(kLength);
  // Relative errors summed over the trials (one dot product can land near the exact value by
  // chance at any precision).
  double fp32_errors = 0.0, split_errors = 0.0, tf32_errors = 0.0;
  for (int trial = 0; trial < 20; ++trial) {
    for (int i = 0; i < kLength; ++i) {
      a[i] = dist(rng);
      b[i] = 0.05f * dist(rng);
    }
    std::vector<float> a_hi, a_lo, b_hi, b_lo;
    split_tf32_host(a, a_hi, a_lo);
    split_tf32_host(b, b_hi, b_lo);
    double exact = 0.0, abs_sum = 0.0;
    float fp32 = 0.0f, split = 0.0f, tf32_only = 0.0f;
    for (int i = 0; i < kLength; ++i) {
      exact += static_cast<double>(a[i]) * b[i];
      abs_sum += std::fabs(static_cast<double>(a[i]) * b[i]);
      fp32 += a[i] * b[i];
      // Each product of TF32 factors is exact in FP32 (11 x 11 significant bits).
      split += tf32(a_lo[i]) * b_hi[i] + a_hi[i] * tf32(b_lo[i]) + a_hi[i] * b_hi[i];
      tf32_only += a_hi[i] * b_hi[i];
    }
    fp32_errors += std::fabs(fp32 - exact) / abs_sum;
    split_errors += std::fabs(split - exact) / abs_sum;
    tf32_errors += std::fabs(tf32_only - exact) / abs_sum;
  }
  EXPECT_LE(split_errors, 2.0 * fp32_errors);
  // The split is what buys the accuracy: TF32 alone is far off.
  EXPECT_GT(tf32_errors, 10.0 * split_errors);
}

}  // namespace
}  // namespace voxrt::backends::cuda
