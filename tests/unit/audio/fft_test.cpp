#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "audio/real_fft.h"

namespace voxrt::audio {
namespace {

class RealFftSizes : public ::testing::TestWithParam<int> {};

TEST_P(RealFftSizes, MatchesNaiveDft) {
  const int size = GetParam();
  auto fft = RealFft::create(size);
  ASSERT_TRUE(fft) << fft.status().to_string();
  std::mt19937 rng(static_cast<unsigned>(size));
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> input(static_cast<std::size_t>(size));
  for (double& x : input) x = uniform(rng);
  std::vector<std::complex<double>> spectrum(static_cast<std::size_t>(fft->num_bins()));
  std::vector<std::complex<double>> scratch(static_cast<std::size_t>(size / 2));
  fft->forward(input, spectrum, scratch);
  double worst = 0.0;
  for (int k = 0; k <= size / 2; ++k) {
    std::complex<double> expected = 0.0;
    for (int n = 0; n < size; ++n) {
      expected += input[n] * std::polar(1.0, -2.0 * M_PI * k * n / size);
    }
    worst = std::max(worst, std::abs(expected - spectrum[k]));
  }
  EXPECT_LT(worst, 1e-9 * size) << "size " << size;
}

INSTANTIATE_TEST_SUITE_P(Sizes, RealFftSizes,
                         ::testing::Values(2, 4, 6, 14, 30, 64, 320, 400, 512, 1024, 2 * 49));

TEST(RealFft, RejectsOddAndTinySizes) {
  EXPECT_FALSE(RealFft::create(0));
  EXPECT_FALSE(RealFft::create(7));
  EXPECT_FALSE(RealFft::create(-4));
}

}  // namespace
}  // namespace voxrt::audio
