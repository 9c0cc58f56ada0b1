// fbank against torchaudio.compliance.kaldi.fbank on real recordings, and streaming == whole.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "audio/audio_io.h"
#include "audio/feature_extractor.h"
#include "audio/resampler.h"
#include "audio_test_support.h"

namespace voxrt::audio {
namespace {

using testing::pocketsphinx_wavs;
using testing::run_command;
using testing::scratch_dir;

struct ReferenceCase {
  std::string name;
  FeatureConfig config;
  std::string torchaudio_options;  // key=value arguments for kaldi.fbank
};

std::vector<ReferenceCase> reference_cases() {
  std::vector<ReferenceCase> cases;
  cases.push_back({"defaults_80", FeatureConfig{}, "num_mel_bins=80 dither=0.0 energy_floor=0.0"});
  {
    FeatureConfig config;
    config.num_bins = 23;
    config.window = WindowType::kHamming;
    config.preemphasis = 0.5;
    config.remove_dc_offset = false;
    config.snip_edges = false;
    config.use_energy = true;
    config.raw_energy = false;
    config.low_freq_hz = 60;
    config.high_freq_hz = -400;
    cases.push_back({"hamming_23_no_snip_energy", config,
                     "num_mel_bins=23 window_type=hamming preemphasis_coefficient=0.5 "
                     "remove_dc_offset=False snip_edges=False use_energy=True raw_energy=False "
                     "low_freq=60 high_freq=-400 dither=0.0 energy_floor=0.0"});
  }
  {
    FeatureConfig config;
    config.num_bins = 40;
    config.window = WindowType::kHann;
    config.use_energy = true;
    config.energy_floor = 1.0;
    config.high_freq_hz = 7000;
    config.frame_length_ms = 32;
    config.frame_shift_ms = 12.5;
    cases.push_back({"hann_40_raw_energy_floor", config,
                     "num_mel_bins=40 window_type=hanning use_energy=True energy_floor=1.0 "
                     "high_freq=7000 frame_length=32 frame_shift=12.5 dither=0.0"});
  }
  {
    FeatureConfig config;
    config.num_bins = 64;
    config.window = WindowType::kRectangular;
    config.use_power = false;
    config.round_to_power_of_two = false;
    cases.push_back({"rectangular_magnitude_no_pow2", config,
                     "num_mel_bins=64 window_type=rectangular use_power=False "
                     "round_to_power_of_two=False dither=0.0 energy_floor=0.0"});
  }
  return cases;
}

void write_floats(const std::string& path, const std::vector<float>& values) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(values.data()),
            static_cast<std::streamsize>(values.size() * 4));
}

std::string reference_script() {
  return testing::source_file("tests/unit/audio/fbank_reference.py");
}

bool torchaudio_available() {
  static const int status =
      run_command("/usr/bin/python3 -c 'import torchaudio.compliance.kaldi' > /dev/null 2>&1");
  return status == 0;
}

template <typename T>
std::vector<T> read_values(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamsize bytes = in.tellg();
  std::vector<T> values(static_cast<std::size_t>(std::max<std::streamsize>(bytes, 0)) / sizeof(T));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(values.data()),
          static_cast<std::streamsize>(values.size() * sizeof(T)));
  return values;
}

struct ErrorSummary {
  double worst = 0.0;
  std::string worst_where;
  std::vector<double> errors;
  void add(double error, const std::string& where) {
    errors.push_back(error);
    if (error > worst) {
      worst = error;
      worst_where = where;
    }
  }
  double quantile(double q) {
    std::sort(errors.begin(), errors.end());
    return errors.empty() ? 0.0 : errors[static_cast<std::size_t>(q * (errors.size() - 1))];
  }
};

// Every config on every pocketsphinx clip (cards and librivox, 16 kHz), against torchaudio in
// float64 and in its default float32. Float32 torchaudio is itself off by up to ~2e-3 from the
// exact value in bins far below the frame's loudest bins (its FFT rounds relative to the peak),
// so the 1e-3 bound is checked against the float64 run of the same torchaudio code, and the
// float32 comparison is held to 99.99% within 1e-3 and all within 5e-3.
TEST(FbankTorchaudio, MatchesOnPocketsphinxRecordings) {
  if (!torchaudio_available()) {
    GTEST_SKIP() << "torchaudio is not importable by /usr/bin/python3: reference fbank skipped";
  }
  const std::vector<std::string> wavs = pocketsphinx_wavs();
  ASSERT_GE(wavs.size(), 10u) << "pocketsphinx-testdata missing (scripts/install-deps.sh)";
  struct Job {
    std::string stem;
    std::size_t case_index;
    std::size_t wav_index;
  };
  const std::vector<ReferenceCase> cases = reference_cases();
  std::vector<Job> jobs;
  std::vector<std::vector<float>> clips;
  const std::string manifest_path = (scratch_dir() / "fbank_manifest.txt").string();
  {
    std::ofstream manifest(manifest_path);
    for (std::size_t w = 0; w < wavs.size(); ++w) {
      auto clip = read_audio_file(wavs[w]);
      ASSERT_TRUE(clip) << clip.status().to_string();
      ASSERT_EQ(clip->sample_rate_hz, 16000);
      // torchaudio gets exactly the samples we use, in Kaldi's int16 scale.
      std::vector<float> scaled(clip->samples);
      for (float& s : scaled) s *= 32768.0f;
      const std::string input = (scratch_dir() / ("clip_" + std::to_string(w) + ".f32")).string();
      write_floats(input, scaled);
      clips.push_back(std::move(clip->samples));
      for (std::size_t c = 0; c < cases.size(); ++c) {
        const std::string stem =
            (scratch_dir() / (cases[c].name + "_" + std::to_string(w))).string();
        manifest << input << " " << stem << " " << cases[c].torchaudio_options << "\n";
        jobs.push_back({stem, c, w});
      }
    }
  }
  const std::string log_path = (scratch_dir() / "fbank_reference.log").string();
  const std::string command =
      "/usr/bin/python3 " + reference_script() + " " + manifest_path + " > " + log_path + " 2>&1";
  ASSERT_EQ(run_command(command), 0) << command << " (see " << log_path << ")";

  ErrorSummary against_float64;
  ErrorSummary against_float32;
  for (const Job& job : jobs) {
    const ReferenceCase& test_case = cases[job.case_index];
    const std::vector<float> reference32 = read_values<float>(job.stem + ".ref32.f32");
    const std::vector<double> reference64 = read_values<double>(job.stem + ".ref64.f64");
    auto features = compute_features(test_case.config, clips[job.wav_index]);
    ASSERT_TRUE(features) << features.status().to_string();
    ASSERT_EQ(features->size(), reference64.size()) << test_case.name << " " << wavs[job.wav_index];
    ASSERT_EQ(features->size(), reference32.size()) << test_case.name << " " << wavs[job.wav_index];
    const int dim = test_case.config.output_dim();
    for (std::size_t i = 0; i < reference64.size(); ++i) {
      const double value = (*features)[i];
      const std::string where = test_case.name + " " + wavs[job.wav_index] + " frame " +
                                std::to_string(i / dim) + " bin " + std::to_string(i % dim);
      against_float64.add(std::fabs(value - reference64[i]), where);
      against_float32.add(std::fabs(value - reference32[i]), where);
    }
  }
  const double float32_q9999 = against_float32.quantile(0.9999);
  std::printf("fbank vs torchaudio float64: %zu values, max abs error %.3g (%s)\n",
              against_float64.errors.size(), against_float64.worst,
              against_float64.worst_where.c_str());
  std::printf("fbank vs torchaudio float32: max abs error %.3g (%s), 99.99%% within %.3g\n",
              against_float32.worst, against_float32.worst_where.c_str(), float32_q9999);
  EXPECT_LT(against_float64.worst, 1e-4) << against_float64.worst_where;
  EXPECT_LT(float32_q9999, 1e-3);
  EXPECT_LT(against_float32.worst, 5e-3) << against_float32.worst_where;
}

// Feeds `samples` in the chunk sizes produced by `next_chunk` and collects every frame.
template <typename NextChunk>
std::vector<float> stream_features(const FeatureConfig& config, const std::vector<float>& samples,
                                   NextChunk next_chunk) {
  auto extractor = StreamingFeatureExtractor::create(config);
  EXPECT_TRUE(extractor) << extractor.status().to_string();
  std::vector<float> features;
  std::size_t position = 0;
  while (position < samples.size()) {
    const std::size_t size = std::min(next_chunk(), samples.size() - position);
    extractor->accept_waveform(std::span<const float>(samples.data() + position, size));
    position += size;
    // Pop a varying number of frames so the output queue is exercised too.
    extractor->pop_frames(features, static_cast<int>(position % 3));
  }
  extractor->input_finished();
  extractor->pop_frames(features, extractor->frames_ready());
  return features;
}

class FbankChunking : public ::testing::TestWithParam<int> {};

TEST_P(FbankChunking, ChunkedIsBitIdenticalToWhole) {
  const std::vector<std::string> wavs = pocketsphinx_wavs();
  ASSERT_FALSE(wavs.empty());
  auto clip = read_audio_file(wavs[static_cast<std::size_t>(GetParam()) % wavs.size()]);
  ASSERT_TRUE(clip) << clip.status().to_string();
  std::vector<FeatureConfig> configs;
  for (const ReferenceCase& test_case : reference_cases()) configs.push_back(test_case.config);
  FeatureConfig dithered;
  dithered.dither = 1.0;
  dithered.dither_seed = 1234;
  configs.push_back(dithered);
  FeatureConfig normalised;
  normalised.num_bins = 20;
  normalised.mean.assign(20, 3.0f);
  normalised.inv_std.assign(20, 0.25f);
  configs.push_back(normalised);
  configs.push_back(FeatureConfig::linear_spectrogram());
  for (const FeatureConfig& config : configs) {
    const std::vector<float> whole =
        stream_features(config, clip->samples, [&] { return clip->samples.size(); });
    const std::vector<float> pieces_20ms =
        stream_features(config, clip->samples, [] { return std::size_t{320}; });
    std::mt19937 rng(static_cast<unsigned>(GetParam()));
    std::uniform_int_distribution<std::size_t> size(0, 1700);
    const std::vector<float> random_pieces =
        stream_features(config, clip->samples, [&] { return size(rng); });
    ASSERT_FALSE(whole.empty());
    ASSERT_EQ(whole.size(), pieces_20ms.size()) << config.to_string();
    ASSERT_EQ(whole.size(), random_pieces.size()) << config.to_string();
    // Bit-identical: compare the bytes, not within a tolerance.
    EXPECT_EQ(0, std::memcmp(whole.data(), pieces_20ms.data(), whole.size() * 4))
        << config.to_string();
    EXPECT_EQ(0, std::memcmp(whole.data(), random_pieces.data(), whole.size() * 4))
        << config.to_string();
  }
}

INSTANTIATE_TEST_SUITE_P(Clips, FbankChunking, ::testing::Values(0, 3, 7));

TEST(Fbank, FrameCountsFollowKaldi) {
  for (bool snip : {true, false}) {
    FeatureConfig config;
    config.snip_edges = snip;
    for (int samples : {0, 1, 200, 399, 400, 401, 560, 16000, 16079, 16080}) {
      auto features = compute_features(config, std::vector<float>(samples, 0.01f));
      ASSERT_TRUE(features);
      const int frames = static_cast<int>(features->size()) / 80;
      const int expected =
          snip ? (samples < 400 ? 0 : 1 + (samples - 400) / 160) : (samples + 80) / 160;
      EXPECT_EQ(frames, expected) << "snip_edges " << snip << " samples " << samples;
    }
  }
}

TEST(Fbank, DitherIsSeededAndChangesOutput) {
  std::vector<float> samples(8000);
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 0.1f);
  for (float& s : samples) s = noise(rng);
  FeatureConfig config;
  config.dither = 1.0;
  config.dither_seed = 7;
  auto first = compute_features(config, samples);
  auto second = compute_features(config, samples);
  config.dither_seed = 8;
  auto other_seed = compute_features(config, samples);
  config.dither = 0.0;
  auto plain = compute_features(config, samples);
  ASSERT_TRUE(first && second && other_seed && plain);
  EXPECT_EQ(*first, *second);
  EXPECT_NE(*first, *other_seed);
  EXPECT_NE(*first, *plain);
}

// DS2 spectrogram against a naive DFT with the same periodic hamming window.
TEST(LinearSpectrogram, MatchesNaiveDft) {
  const FeatureConfig config = FeatureConfig::linear_spectrogram();
  std::vector<float> samples(16000);
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-0.5f, 0.5f);
  for (float& s : samples) s = uniform(rng);
  auto features = compute_features(config, samples);
  ASSERT_TRUE(features);
  ASSERT_EQ(features->size() % 161, 0u);
  const int frames = static_cast<int>(features->size()) / 161;
  EXPECT_EQ(frames, 1 + (16000 - 320) / 160);
  double worst = 0.0;
  for (int f = 0; f < frames; f += 17) {
    for (int k = 0; k < 161; ++k) {
      double re = 0.0;
      double im = 0.0;
      for (int n = 0; n < 320; ++n) {
        const double window = 0.54 - 0.46 * std::cos(2.0 * M_PI * n / 320.0);
        const double x = samples[static_cast<std::size_t>(f * 160 + n)] * window;
        re += x * std::cos(2.0 * M_PI * k * n / 320.0);
        im -= x * std::sin(2.0 * M_PI * k * n / 320.0);
      }
      const double expected = std::log1p(std::sqrt(re * re + im * im));
      worst = std::max(worst, std::fabs(expected - (*features)[f * 161 + k]));
    }
  }
  EXPECT_LT(worst, 1e-5);
}

}  // namespace
}  // namespace voxrt::audio
