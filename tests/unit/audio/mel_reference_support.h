// What the log-mel front-end tests (whisper_log_mel_test.cpp, torchaudio_log_mel_test.cpp) share
// to compare the streaming extractor with a Python reference: feeding a clip in uneven pieces,
// running the reference script on the clip through float32 files, and the worst difference.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iomanip>
#include <numbers>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "audio/feature_config.h"
#include "audio/feature_extractor.h"
#include "audio_test_support.h"

namespace voxrt::audio::testing {

// A chirp, a tone burst every third half second and white noise: energy in every mel bin. Sample
// i is 0 (digital silence) where `silent(i)`, and without the noise where `quiet(i)`.
template <class Silent, class Quiet>
std::vector<float> chirp_burst_noise(int samples, unsigned seed, Silent silent, Quiet quiet) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> noise(0.0f, 0.05f);
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) {
    const double t = i / 16000.0;
    const double chirp = 0.3 * std::sin(2 * std::numbers::pi * (100 + 400 * t) * t);
    const double burst =
        (i / 8000) % 3 == 0 ? 0.2 * std::sin(2 * std::numbers::pi * 1234.5 * t) : 0;
    out[static_cast<std::size_t>(i)] =
        silent(i) ? 0.0f : static_cast<float>(chirp + burst) + (quiet(i) ? 0.0f : noise(rng));
  }
  return out;
}

// Every frame of `config` for `samples`, fed in pieces of 1 sample, then each
// `piece * multiplier % modulus + 1` samples after the one before: piece edges fall everywhere
// in the frames, so the test shows streaming equals the whole clip.
inline std::vector<float> features_in_uneven_pieces(const FeatureConfig& config,
                                                    const std::vector<float>& samples,
                                                    std::size_t multiplier, std::size_t modulus) {
  auto extractor = StreamingFeatureExtractor::create(config);
  EXPECT_TRUE(extractor.has_value()) << extractor.status().to_string();
  if (!extractor.has_value()) return {};
  std::size_t at = 0;
  std::size_t piece = 1;
  while (at < samples.size()) {
    const std::size_t n = std::min(piece, samples.size() - at);
    extractor->accept_waveform(std::span<const float>(samples.data() + at, n));
    at += n;
    piece = piece * multiplier % modulus + 1;
  }
  extractor->input_finished();
  std::vector<float> frames;
  extractor->pop_frames(frames, extractor->frames_ready());
  return frames;
}

inline void write_f32(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * sizeof(float)));
}

inline std::vector<float> read_f32(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const auto bytes = static_cast<std::size_t>(in.tellg());
  std::vector<float> values(bytes / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()), static_cast<std::streamsize>(bytes));
  return values;
}

// One run of a reference script of tests/unit/audio: `status` is its exit status (3: its Python
// modules are not importable), `values` what it wrote.
struct MelReference {
  int status = -1;
  std::string command;
  std::vector<float> values;
};

// Writes `samples` to `<scratch>/<prefix>_<samples>_<mel_bins>.in.f32`, runs
// `/usr/bin/python3 tests/unit/audio/<script> IN OUT mel_bins` (the source tree from
// $VOXRT_SOURCE_DIR) and reads OUT.
inline MelReference run_mel_reference(const std::string& script, const std::string& prefix,
                                      const std::vector<float>& samples, int mel_bins) {
  const std::string name =
      prefix + "_" + std::to_string(samples.size()) + "_" + std::to_string(mel_bins);
  const char* source = std::getenv("VOXRT_SOURCE_DIR");
  const std::string script_path =
      std::string(source != nullptr ? source : ".") + "/tests/unit/audio/" + script;
  const std::string stem = (scratch_dir() / name).string();
  write_f32(stem + ".in.f32", samples);
  MelReference reference;
  reference.command = "/usr/bin/python3 " + script_path + " " + stem + ".in.f32 " + stem +
                      ".ref.f32 " + std::to_string(mel_bins) + " > " + stem + ".log 2>&1";
  reference.status = run_command(reference.command);
  if (reference.status == 0) reference.values = read_f32(stem + ".ref.f32");
  return reference;
}

// The largest difference between `ours` and `reference` (of equal sizes) and where it is:
// absolute, or with `relative_above_one` divided by max(1, |reference|) (for values far from 1,
// such as logs computed in float32).
struct WorstDifference {
  double value = 0;
  std::size_t at = 0;
};

inline WorstDifference worst_difference(const std::vector<float>& ours,
                                        const std::vector<float>& reference,
                                        bool relative_above_one) {
  WorstDifference worst;
  for (std::size_t i = 0; i < std::min(ours.size(), reference.size()); ++i) {
    const double scale =
        relative_above_one ? std::max(1.0, std::fabs(static_cast<double>(reference[i]))) : 1.0;
    const double error = std::fabs(static_cast<double>(ours[i]) - reference[i]) / scale;
    if (error > worst.value) worst = {error, i};
  }
  return worst;
}

// Where the worst difference is, for a failure message: "frame F bin B: ours vs reference".
inline std::string describe(const WorstDifference& worst, const std::vector<float>& ours,
                            const std::vector<float>& reference, int mel_bins) {
  const auto bins = static_cast<std::size_t>(mel_bins);
  std::ostringstream out;
  out << std::setprecision(9) << "frame " << worst.at / bins << " bin " << worst.at % bins << ": "
      << ours[worst.at] << " vs " << reference[worst.at];
  return out.str();
}

}  // namespace voxrt::audio::testing
