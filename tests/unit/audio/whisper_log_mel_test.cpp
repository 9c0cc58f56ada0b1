// Whisper's front end (whisper_log_mel.h through the streaming extractor) against a reference
// written from the definition in Python (whisper_mel_reference.py: torch.stft + a numpy Slaney
// filterbank): 80 and 128 bins, a clip shorter than one window and one over two windows, fed in
// uneven pieces; and the filterbank's own properties.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numbers>
#include <random>

#include "audio/feature_extractor.h"
#include "audio/whisper_log_mel.h"
#include "audio_test_support.h"

namespace voxrt::audio {
namespace {

using testing::run_command;
using testing::scratch_dir;

// A chirp, a tone burst and noise: energy in every mel bin, silence in places.
std::vector<float> test_signal(int samples, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    const double t = i / 16000.0;
    const double chirp = 0.3 * std::sin(2 * std::numbers::pi * (100 + 400 * t) * t);
    const double burst =
        (i / 8000) % 3 == 0 ? 0.2 * std::sin(2 * std::numbers::pi * 1234.5 * t) : 0;
    out[i] = static_cast<float>(chirp + burst) + ((i / 16000) % 4 == 3 ? 0.0f : noise(rng));
  }
  return out;
}

// The C++ side: frames from pieces of uneven size, padded with silence to whole windows, each
// window normalised.
std::vector<float> whisper_features(const std::vector<float>& samples, int mel_bins) {
  auto extractor = StreamingFeatureExtractor::create(whisper_feature_config(mel_bins));
  EXPECT_TRUE(extractor.has_value()) << extractor.status().to_string();
  std::size_t at = 0;
  std::size_t piece = 1;
  while (at < samples.size()) {
    const std::size_t n = std::min(piece, samples.size() - at);
    extractor->accept_waveform(std::span<const float>(samples.data() + at, n));
    at += n;
    piece = piece * 3 % 7919 + 1;
  }
  extractor->input_finished();
  std::vector<float> frames;
  extractor->pop_frames(frames, extractor->frames_ready());
  const std::size_t window_values = static_cast<std::size_t>(kWhisperWindowFrames) * mel_bins;
  const std::size_t windows = (frames.size() + window_values - 1) / window_values;
  frames.resize(windows * window_values, kWhisperSilenceLogMel);
  for (std::size_t w = 0; w < windows; ++w) {
    normalise_whisper_window(std::span<float>(frames.data() + w * window_values, window_values));
  }
  return frames;
}

void write_f32(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const auto bytes = static_cast<std::size_t>(in.tellg());
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  return values;
}

std::string reference_script() {
  const char* source = std::getenv("VOXRT_SOURCE_DIR");
  return std::string(source != nullptr ? source : ".") +
         "/tests/unit/audio/whisper_mel_reference.py";
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
    const std::string stem = (scratch_dir() / ("whisper_" + std::to_string(c.samples) + "_" +
                                               std::to_string(c.mel_bins)))
                                 .string();
    write_f32(stem + ".in.f32", samples);
    const std::string command = "/usr/bin/python3 " + reference_script() + " " + stem + ".in.f32 " +
                                stem + ".ref.f32 " + std::to_string(c.mel_bins) + " > " + stem +
                                ".log 2>&1";
    const int status = run_command(command);
    if (status == 3) GTEST_SKIP() << "torch is not importable by /usr/bin/python3";
    ASSERT_EQ(status, 0) << command;
    const std::vector<float> reference = read_f32(stem + ".ref.f32");
    const std::vector<float> ours = whisper_features(samples, c.mel_bins);
    ASSERT_EQ(ours.size(), reference.size());
    ASSERT_EQ(ours.size() % (static_cast<std::size_t>(kWhisperWindowFrames) * c.mel_bins), 0u);
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const double error = std::fabs(static_cast<double>(ours[i]) - reference[i]);
      if (error > worst) {
        worst = error;
        worst_at = i;
      }
    }
    EXPECT_LT(worst, 1e-4) << "frame " << worst_at / c.mel_bins << " bin " << worst_at % c.mel_bins
                           << ": " << ours[worst_at] << " vs " << reference[worst_at];
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
