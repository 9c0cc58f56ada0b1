// torchaudio's RNN-T front end (torchaudio_log_mel.h through the streaming extractor) against
// torchaudio itself (torchaudio_mel_reference.py: MelSpectrogram, the pipeline's gain and
// piecewise-linear log): 80 and 40 bins, clips whose length is and is not a whole number of hops,
// fed in uneven pieces; and the filterbank's and the log's own properties.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <numbers>
#include <random>

#include "audio/feature_extractor.h"
#include "audio/torchaudio_log_mel.h"
#include "audio_test_support.h"

namespace voxrt::audio {
namespace {

using testing::run_command;
using testing::scratch_dir;

// A chirp, a tone burst, noise and digital silence: loud and quiet bins on both sides of e.
std::vector<float> test_signal(int samples, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    const double t = i / 16000.0;
    const double chirp = 0.3 * std::sin(2 * std::numbers::pi * (100 + 400 * t) * t);
    const double burst =
        (i / 8000) % 3 == 0 ? 0.2 * std::sin(2 * std::numbers::pi * 1234.5 * t) : 0;
    const bool silent = (i / 4000) % 5 == 4;
    out[i] = silent ? 0.0f : static_cast<float>(chirp + burst) + noise(rng);
  }
  return out;
}

std::vector<float> voxrt_features(const std::vector<float>& samples, int mel_bins) {
  auto extractor = StreamingFeatureExtractor::create(torchaudio_feature_config(mel_bins));
  EXPECT_TRUE(extractor.has_value()) << extractor.status().to_string();
  std::size_t at = 0;
  std::size_t piece = 1;
  while (at < samples.size()) {
    const std::size_t n = std::min(piece, samples.size() - at);
    extractor->accept_waveform(std::span<const float>(samples.data() + at, n));
    at += n;
    piece = piece * 5 % 3001 + 1;
  }
  extractor->input_finished();
  std::vector<float> frames;
  extractor->pop_frames(frames, extractor->frames_ready());
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
         "/tests/unit/audio/torchaudio_mel_reference.py";
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
    const std::string stem = (scratch_dir() / ("torchaudio_mel_" + std::to_string(c.samples) + "_" +
                                               std::to_string(c.mel_bins)))
                                 .string();
    write_f32(stem + ".in.f32", samples);
    const std::string command = "/usr/bin/python3 " + reference_script() + " " + stem + ".in.f32 " +
                                stem + ".ref.f32 " + std::to_string(c.mel_bins) + " > " + stem +
                                ".log 2>&1";
    const int status = run_command(command);
    if (status == 3) GTEST_SKIP() << "torchaudio is not importable by /usr/bin/python3";
    ASSERT_EQ(status, 0) << command;
    const std::vector<float> reference = read_f32(stem + ".ref.f32");
    const std::vector<float> ours = voxrt_features(samples, c.mel_bins);
    // torch.stft(center=True): 1 + samples / hop frames.
    ASSERT_EQ(reference.size(), static_cast<std::size_t>(1 + c.samples / 160) * c.mel_bins);
    ASSERT_EQ(ours.size(), reference.size());
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      // Relative above 1 (log values up to ~25; torch computes in float32), absolute below.
      const double scale = std::max(1.0, std::fabs(static_cast<double>(reference[i])));
      const double error = std::fabs(static_cast<double>(ours[i]) - reference[i]) / scale;
      if (error > worst) {
        worst = error;
        worst_at = i;
      }
    }
    std::cout << c.samples << " samples, " << c.mel_bins << " bins: worst difference " << worst
              << "\n";
    EXPECT_LT(worst, 1e-4) << "frame " << worst_at / c.mel_bins << " bin " << worst_at % c.mel_bins
                           << ": " << ours[worst_at] << " vs " << reference[worst_at];
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
