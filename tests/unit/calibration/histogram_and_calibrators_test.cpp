// Histograms and calibrators: exact growth, independence from batching, and what each calibrator
// makes of clean, one-sided and outlier-ridden distributions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "builder/calibration/range_calibrators.h"
#include "builder/calibration/tensor_histogram.h"

namespace voxrt::builder::calibration {
namespace {

std::vector<float> gaussian(std::size_t count, std::uint32_t seed, float sigma, float mean = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(mean, sigma);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(TensorHistogram, GrowsByDoublingAndKeepsEveryValue) {
  TensorHistogram h;
  const std::vector<float> small{0.1f, -0.2f, 0.3f};
  h.add(small);
  EXPECT_DOUBLE_EQ(h.range(), 0.5);
  const std::vector<float> large{-5.0f, 7.0f, NAN};
  h.add(large);
  EXPECT_DOUBLE_EQ(h.range(), 8.0);
  EXPECT_EQ(h.count(), 6u);
  EXPECT_EQ(h.non_finite(), 1u);
  EXPECT_FLOAT_EQ(h.min(), -5.0f);
  EXPECT_FLOAT_EQ(h.max(), 7.0f);
  std::uint64_t total = 0;
  for (auto b : h.bins()) total += b;
  EXPECT_EQ(total, 5u);
  // Values stay on their side of zero through the merges.
  std::uint64_t negative = 0;
  for (int i = 0; i < TensorHistogram::kBinsPerSide; ++i)
    negative += h.bins()[static_cast<std::size_t>(i)];
  EXPECT_EQ(negative, 2u);
}

TEST(TensorHistogram, BatchingDoesNotChangeTheResult) {
  // Growing in steps (small values first) ends where one pass over everything does.
  std::vector<float> values = gaussian(5000, 1, 0.5f);
  values.push_back(30.0f);
  TensorHistogram whole, pieces;
  whole.add(values);
  for (std::size_t i = 0; i < values.size(); i += 97) {
    const std::size_t n = std::min<std::size_t>(97, values.size() - i);
    pieces.add(std::span<const float>(values.data() + i, n));
  }
  EXPECT_EQ(whole.range(), pieces.range());
  EXPECT_EQ(whole.bins(), pieces.bins());
}

TEST(Calibrators, OneSidedTensorsGetAllLevels) {
  std::vector<float> relu = gaussian(20000, 2, 1.0f);
  for (float& x : relu) x = std::max(x, 0.0f);
  TensorHistogram h;
  h.add(relu);
  for (Calibrator c : {Calibrator::kMinMax, Calibrator::kEntropy, Calibrator::kPercentile}) {
    const CalibratedRange r = calibrate_range(h, c, 99.99);
    EXPECT_FALSE(r.symmetric) << calibrator_name(c);
    EXPECT_EQ(r.quantization.zero_point, 0) << calibrator_name(c);
  }
  // Min-max keeps the whole range.
  const CalibratedRange minmax = calibrate_range(h, Calibrator::kMinMax, 99.99);
  EXPECT_NEAR(minmax.quantization.highest(), h.max(), minmax.quantization.scale);
}

TEST(Calibrators, EntropyAndPercentileClipRareOutliers) {
  std::vector<float> values = gaussian(100000, 3, 1.0f);
  values[10] = 80.0f;  // one outlier
  values[11] = -75.0f;
  TensorHistogram h;
  h.add(values);
  const CalibratedRange minmax = calibrate_range(h, Calibrator::kMinMax, 99.99);
  const CalibratedRange entropy = calibrate_range(h, Calibrator::kEntropy, 99.99);
  const CalibratedRange percentile = calibrate_range(h, Calibrator::kPercentile, 99.99);
  // (Within a step: the zero point is an integer, so the ends move by up to one scale.)
  EXPECT_GE(minmax.quantization.highest(), 80.0f - minmax.quantization.scale);
  EXPECT_LE(minmax.quantization.lowest(), -75.0f + minmax.quantization.scale);
  // A unit Gaussian's useful range is a few sigma, not 80 (the histogram's bins are 1/16 wide
  // here, and the search starts at 128 of them: 8).
  for (const CalibratedRange* r : {&entropy, &percentile}) {
    EXPECT_LT(r->quantization.highest(), 10.0f);
    EXPECT_GT(r->quantization.highest(), 3.0f);
    EXPECT_GT(r->quantization.lowest(), -10.0f);
    EXPECT_LT(r->quantization.lowest(), -3.0f);
  }
}

TEST(Calibrators, SameHistogramSameRange) {
  TensorHistogram a, b;
  const std::vector<float> values = gaussian(30000, 4, 2.0f, 0.5f);
  a.add(values);
  b.add(values);
  for (Calibrator c : {Calibrator::kMinMax, Calibrator::kEntropy, Calibrator::kPercentile}) {
    const CalibratedRange x = calibrate_range(a, c, 99.9), y = calibrate_range(b, c, 99.9);
    EXPECT_EQ(x.quantization.scale, y.quantization.scale);
    EXPECT_EQ(x.quantization.zero_point, y.quantization.zero_point);
  }
}

}  // namespace
}  // namespace voxrt::builder::calibration
