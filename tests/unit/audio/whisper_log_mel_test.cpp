// Whisper's front end (whisper_log_mel.h through the streaming extractor) against a reference
// written from the definition in Python (whisper_mel_reference.py: torch.stft + a numpy Slaney
// filterbank): 80 and 128 bins, a clip shorter than one window and one over two windows, fed in
// uneven pieces; and the filterbank's own properties.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "audio/feature_extractor.h"
#include "audio/whisper_log_mel.h"
#include "mel_reference_support.h"

namespace voxrt::audio {
namespace {

// A chirp, a tone burst and noise: energy in every mel bin, silence in places (every fourth
// second without the noise).
std::vector<float> test_signal(int samples, unsigned seed) {
  return testing::chirp_burst_noise(
      samples, seed, [](int) { return false; }, [](int i) { return (i / 16000) % 4 == 3; });
}

// The C++ side: frames from pieces of uneven size, padded with silence to whole windows, each
// window normalised.
std::vector<float> whisper_features(const std::vector<float>& samples, int mel_bins) {
  std::vector<float> frames =
      testing::features_in_uneven_pieces(whisper_feature_config(mel_bins), samples, 3, 7919);
  const std::size_t window_values = static_cast<std::size_t>(kWhisperWindowFrames) * mel_bins;
  const std::size_t windows = (frames.size() + window_values - 1) / window_values;
  frames.resize(windows * window_values, kWhisperSilenceLogMel);
  for (std::size_t w = 0; w < windows; ++w) {
    normalise_whisper_window(std::span<float>(frames.data() + w * window_values, window_values));
  }
  return frames;
}

TEST(WhisperLogMel, MatchesTheReferenceForOneAndSeveralWindows) {
  struct Case {
    int samples;
    int mel_bins;
  };
  // 1.3 s (one window, mostly padding) and 61.7 s (three windows, the last one partial).
  for (const Case c : {Case{20800, 80}, Case{20800, 128}, Case{987200, 80}}) {
    SCOPED_TRACE(::testing::Message() << c.samples << " samples, " << c.mel_bins << " bins");
    const std::vector<float> samples = test_signal(c.samples, static_cast<unsigned>(c.samples));
    const testing::MelReference reference =
        testing::run_mel_reference("whisper_mel_reference.py", "whisper", samples, c.mel_bins);
    if (reference.status == 3) GTEST_SKIP() << "torch is not importable by /usr/bin/python3";
    ASSERT_EQ(reference.status, 0) << reference.command;
    const std::vector<float> ours = whisper_features(samples, c.mel_bins);
    ASSERT_EQ(ours.size(), reference.values.size());
    ASSERT_EQ(ours.size() % (static_cast<std::size_t>(kWhisperWindowFrames) * c.mel_bins), 0u);
    const testing::WorstDifference worst =
        testing::worst_difference(ours, reference.values, /*relative_above_one=*/false);
    EXPECT_LT(worst.value, 1e-4) << testing::describe(worst, ours, reference.values, c.mel_bins);
  }
}

TEST(WhisperLogMel, SlaneyFilterbankTrianglesHaveEqualArea) {
  // Slaney normalisation: each triangle's integral over Hz is 1 (2 / width times half the width
  // times height 1), so the weights summed times the bin spacing is ~1 for triangles wide
  // against the 40 Hz FFT bins (the top 20 of 80 are 300-600 Hz wide).
  const auto bank = slaney_mel_filterbank(16000, 400, 80);
  ASSERT_EQ(bank.size(), 80u);
  for (std::size_t m = 60; m < bank.size(); ++m) {
    ASSERT_EQ(bank[m].size(), 201u);
    double sum = 0;
    for (double w : bank[m]) sum += w;
    EXPECT_NEAR(sum * 40.0, 1.0, 0.01) << "mel bin " << m;
  }
}

TEST(WhisperLogMel, WindowNormalisationClampsAtMaxMinusEight) {
  std::vector<float> window = {-10.0f, 0.5f, -7.0f, -7.5f};
  normalise_whisper_window(window);
  EXPECT_FLOAT_EQ(window[0], (-7.5f + 4.0f) / 4.0f);
  EXPECT_FLOAT_EQ(window[1], (0.5f + 4.0f) / 4.0f);
  EXPECT_FLOAT_EQ(window[2], (-7.0f + 4.0f) / 4.0f);
  EXPECT_FLOAT_EQ(window[3], (-7.5f + 4.0f) / 4.0f);
}

}  // namespace
}  // namespace voxrt::audio
