// torchaudio's RNN-T front end (torchaudio_log_mel.h through the streaming extractor) against
// torchaudio itself (torchaudio_mel_reference.py: MelSpectrogram, the pipeline's gain and
// piecewise-linear log): 80 and 40 bins, clips whose length is and is not a whole number of hops,
// fed in uneven pieces; and the filterbank's and the log's own properties.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <numbers>

#include "audio/feature_extractor.h"
#include "audio/torchaudio_log_mel.h"
#include "mel_reference_support.h"

namespace voxrt::audio {
namespace {

// A chirp, a tone burst, noise and digital silence (every fifth quarter second): loud and quiet
// bins on both sides of e.
std::vector<float> test_signal(int samples, unsigned seed) {
  return testing::chirp_burst_noise(
      samples, seed, [](int i) { return (i / 4000) % 5 == 4; }, [](int) { return false; });
}

std::vector<float> voxrt_features(const std::vector<float>& samples, int mel_bins) {
  return testing::features_in_uneven_pieces(torchaudio_feature_config(mel_bins), samples, 5, 3001);
}

TEST(TorchaudioLogMel, MatchesTorchaudiosPipelineFeatures) {
  struct Case {
    int samples;
    int mel_bins;
  };
  // 2.1 s (a whole number of hops), 1.2345 s (not), and 40 bins.
  for (const Case c : {Case{33600, 80}, Case{19752, 80}, Case{19752, 40}}) {
    SCOPED_TRACE(::testing::Message() << c.samples << " samples, " << c.mel_bins << " bins");
    const std::vector<float> samples = test_signal(c.samples, static_cast<unsigned>(c.samples));
    const testing::MelReference reference = testing::run_mel_reference(
        "torchaudio_mel_reference.py", "torchaudio_mel", samples, c.mel_bins);
    if (reference.status == 3) GTEST_SKIP() << "torchaudio is not importable by /usr/bin/python3";
    ASSERT_EQ(reference.status, 0) << reference.command;
    const std::vector<float> ours = voxrt_features(samples, c.mel_bins);
    // torch.stft(center=True): 1 + samples / hop frames.
    ASSERT_EQ(reference.values.size(), static_cast<std::size_t>(1 + c.samples / 160) * c.mel_bins);
    ASSERT_EQ(ours.size(), reference.values.size());
    // Relative above 1 (log values up to ~25; torch computes in float32), absolute below.
    const testing::WorstDifference worst =
        testing::worst_difference(ours, reference.values, /*relative_above_one=*/true);
    std::cout << c.samples << " samples, " << c.mel_bins << " bins: worst difference "
              << worst.value << "\n";
    EXPECT_LT(worst.value, 1e-4) << testing::describe(worst, ours, reference.values, c.mel_bins);
  }
}

TEST(TorchaudioLogMel, FilterbankTrianglesPeakAtOneAndCoverTheBand) {
  const auto weights = htk_mel_filterbank(16000, 400, 80);
  ASSERT_EQ(weights.size(), 80u);
  for (std::size_t m = 0; m < weights.size(); ++m) {
    ASSERT_EQ(weights[m].size(), 201u);
    double peak = 0;
    for (double w : weights[m]) {
      EXPECT_GE(w, 0.0);
      peak = std::max(peak, w);
    }
    // No area normalisation: each triangle's top is 1 where an FFT bin sits near its centre;
    // the narrow low triangles fall between bins (40 Hz apart) and may stay lower.
    EXPECT_LE(peak, 1.0 + 1e-12) << "bin " << m;
    if (m >= 20) {
      EXPECT_GT(peak, 0.5) << "bin " << m;
    }
  }
  // The DC bin is the first triangle's corner (weight 0), the Nyquist bin the last one's.
  EXPECT_EQ(weights.front()[0], 0.0);
  EXPECT_NEAR(weights.back()[200], 0.0, 1e-9);
}

TEST(TorchaudioLogMel, PiecewiseLinearLogIsContinuousAtE) {
  EXPECT_DOUBLE_EQ(piecewise_linear_log(0.0), 0.0);
  EXPECT_NEAR(piecewise_linear_log(std::numbers::e), 1.0, 1e-15);
  EXPECT_NEAR(piecewise_linear_log(std::numbers::e * (1 + 1e-12)), 1.0, 1e-11);
  EXPECT_DOUBLE_EQ(piecewise_linear_log(1.0), 1.0 / std::numbers::e);
  EXPECT_DOUBLE_EQ(piecewise_linear_log(100.0), std::log(100.0));
}

}  // namespace
}  // namespace voxrt::audio
