#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "audio/resampler.h"

namespace voxrt::audio {
namespace {

std::vector<float> tone(int rate_hz, double freq_hz, int samples) {
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) out[i] = 0.5f * std::sin(2.0 * M_PI * freq_hz * i / rate_hz);
  return out;
}

class ResamplerRates : public ::testing::TestWithParam<int> {};

TEST_P(ResamplerRates, ChunkedEqualsWholeAndKeepsTheTone) {
  const int input_rate = GetParam();
  const std::vector<float> input = tone(input_rate, 440.0, input_rate * 2 + 37);
  auto whole = resample(input, input_rate, 16000);
  ASSERT_TRUE(whole) << whole.status().to_string();
  // Length: duration preserved to within a sample.
  EXPECT_NEAR(static_cast<double>(whole->size()), input.size() * 16000.0 / input_rate, 1.0);

  auto resampler = StreamingResampler::create(input_rate, 16000);
  ASSERT_TRUE(resampler);
  std::vector<float> chunked;
  std::mt19937 rng(static_cast<unsigned>(input_rate));
  std::uniform_int_distribution<std::size_t> size(0, 700);
  for (std::size_t position = 0; position < input.size();) {
    const std::size_t n = std::min(size(rng), input.size() - position);
    ASSERT_TRUE(resampler->process(std::span(input.data() + position, n), chunked));
    position += n;
  }
  ASSERT_TRUE(resampler->flush(chunked));
  ASSERT_EQ(chunked.size(), whole->size());
  double worst = 0.0;
  for (std::size_t i = 0; i < chunked.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(chunked[i]) - (*whole)[i]));
  }
  EXPECT_LT(worst, 1e-6) << "chunked vs whole";

  // Away from the edges, the output is the same tone at the new rate.
  const std::vector<float> expected = tone(16000, 440.0, static_cast<int>(whole->size()));
  double tone_error = 0.0;
  for (std::size_t i = 2000; i + 2000 < whole->size(); ++i) {
    tone_error = std::max(tone_error, std::fabs(static_cast<double>((*whole)[i]) - expected[i]));
  }
  EXPECT_LT(tone_error, 2e-3);

  // After flush the resampler serves a new stream identically.
  std::vector<float> again;
  ASSERT_TRUE(resampler->process(input, again));
  ASSERT_TRUE(resampler->flush(again));
  EXPECT_EQ(again, *whole);
}

INSTANTIATE_TEST_SUITE_P(Rates, ResamplerRates,
                         ::testing::Values(8000, 11025, 22050, 44100, 48000, 16000));

TEST(Resampler, RejectsBadRates) {
  EXPECT_FALSE(StreamingResampler::create(0, 16000));
  EXPECT_FALSE(StreamingResampler::create(16000, -1));
  EXPECT_FALSE(StreamingResampler::create(NAN, 16000));
}

}  // namespace
}  // namespace voxrt::audio
