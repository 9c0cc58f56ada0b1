// NeMo's front end (audio/nemo_features.h) settings and invariants, and the waveform frames that
// carry raw samples to a family with its own front end. Its values against a torch reference are
// checked in tests/models/nemo_ctc_test.cpp (the reference needs /usr/bin/python3's torch).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "audio/feature_extractor.h"
#include "audio/nemo_features.h"
#include "audio/nemo_log_mel.h"

namespace voxrt::audio {
namespace {

std::vector<float> tone(int samples, double hz) {
  std::vector<float> out(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i)
    out[static_cast<std::size_t>(i)] =
        0.3f * static_cast<float>(std::sin(2.0 * std::numbers::pi * hz * i / 16000.0));
  return out;
}

TEST(WaveformFeatures, FramesAreTheSamplesOfEachHopWhateverTheChunking) {
  const FeatureConfig config = FeatureConfig::waveform(16000, 10.0);
  ASSERT_TRUE(config.validate()) << config.validate().to_string();
  EXPECT_EQ(config.output_dim(), 160);
  const std::vector<float> samples = tone(1000, 440.0);
  auto extractor = StreamingFeatureExtractor::create(config);
  ASSERT_TRUE(extractor.has_value());
  for (std::size_t begin = 0; begin < samples.size(); begin += 77) {
    const std::size_t n = std::min<std::size_t>(77, samples.size() - begin);
    extractor->accept_waveform(std::span<const float>(samples.data() + begin, n));
  }
  extractor->input_finished();
  std::vector<float> frames;
  // 1000 samples are 6 whole hops; the last 40 samples make no frame.
  EXPECT_EQ(extractor->pop_frames(frames, 100), 6);
  ASSERT_EQ(frames.size(), 960u);
  for (std::size_t i = 0; i < frames.size(); ++i) ASSERT_EQ(frames[i], samples[i]) << i;
}

TEST(WaveformFeatures, MetadataAndValidation) {
  auto config = FeatureConfig::from_metadata(
      {{"voxrt.feature.type", "waveform"}, {"voxrt.feature.frame_shift_ms", "10"}});
  ASSERT_TRUE(config.has_value()) << config.status().to_string();
  EXPECT_EQ(config->type, FeatureType::kWaveform);
  EXPECT_EQ(config->num_bins, 160);
  FeatureConfig wrong = FeatureConfig::waveform(16000, 10.0);
  wrong.num_bins = 80;
  EXPECT_NE(wrong.validate().message().find("samples per hop (160)"), std::string::npos)
      << wrong.validate().message();
  auto bad = FeatureConfig::from_metadata({{"voxrt.feature.type", "mfcc"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find(
                "fbank, linear_spectrogram, waveform, whisper_log_mel, torchaudio_log_mel or "
                "nemo_log_mel"),
            std::string::npos);
}

// The streaming front end of NeMo's cache-aware models (nemo_log_mel: pre-emphasis over the stream
// in the frame placement) gives the whole-utterance NeMo front end's values (normalize NA), frame
// for frame, however the audio is cut: whole, one sample at a time, or 333-sample pieces (the
// sample before each frame, which pre-emphasis reads, must survive the buffer's trimming).
TEST(NemoLogMel, StreamsTheWholeUtteranceFrontEndWhateverTheChunking) {
  std::vector<float> samples = tone(5000, 440.0);
  for (std::size_t i = 0; i < samples.size(); ++i)
    samples[i] += 0.2f * static_cast<float>(std::sin(0.37 * static_cast<double>(i * i % 997)));
  NemoFeatureConfig whole_config;
  whole_config.window_size_s = 0.025;
  whole_config.n_fft = 512;
  whole_config.n_mels = 80;
  whole_config.normalize = NemoNormalize::kNone;
  auto computer = NemoFeatureComputer::create(whole_config);
  ASSERT_TRUE(computer.has_value()) << computer.status().to_string();
  auto whole = computer->compute(samples);
  ASSERT_TRUE(whole.has_value()) << whole.status().to_string();
  ASSERT_EQ(whole->frames, 1 + 5000 / 160);
  const FeatureConfig config = nemo_log_mel_feature_config(80);
  ASSERT_TRUE(config.validate()) << config.validate().to_string();
  std::vector<float> first;
  for (std::size_t piece : {std::size_t{5000}, std::size_t{1}, std::size_t{333}}) {
    SCOPED_TRACE(piece);
    auto extractor = StreamingFeatureExtractor::create(config);
    ASSERT_TRUE(extractor.has_value()) << extractor.status().to_string();
    for (std::size_t begin = 0; begin < samples.size(); begin += piece) {
      const std::size_t n = std::min(piece, samples.size() - begin);
      extractor->accept_waveform(std::span<const float>(samples.data() + begin, n));
    }
    extractor->input_finished();
    std::vector<float> frames;
    ASSERT_EQ(extractor->pop_frames(frames, 1000), whole->frames);
    if (first.empty()) first = frames;
    EXPECT_EQ(frames, first) << "the features depend on how the audio was cut";
    float worst = 0.0f;
    for (int f = 0; f < whole->frames; ++f) {
      for (int m = 0; m < 80; ++m) {
        const float want = whole->values[static_cast<std::size_t>(m) * whole->padded_frames + f];
        const float got = frames[static_cast<std::size_t>(f) * 80 + m];
        worst = std::max(worst, std::abs(want - got) / std::max(1.0f, std::abs(want)));
      }
    }
    EXPECT_LT(worst, 1e-4f);
  }
}

TEST(NemoFeatureConfig, DefaultsAndFrameCounts) {
  NemoFeatureConfig config;
  config.window_size_s = 0.025;
  EXPECT_EQ(config.window_samples(), 400);
  EXPECT_EQ(config.hop_samples(), 160);
  EXPECT_EQ(config.fft_size(), 512);  // 400 rounded up to a power of two
  // torch.stft centred: 1 + samples / hop.
  EXPECT_EQ(config.frames_for(16000), 101);
  EXPECT_EQ(config.frames_for(159), 1);
}

TEST(NemoFeatureConfig, MetadataRoundTripsAndErrorsNameTheKey) {
  NemoFeatureConfig config;
  config.n_mels = 64;
  config.normalize = NemoNormalize::kAllFeatures;
  config.log_guard = NemoLogGuard::kClamp;
  config.pad_to = 16;
  config.reflect_pad = true;
  auto back = NemoFeatureConfig::from_metadata(config.to_metadata());
  ASSERT_TRUE(back.has_value()) << back.status().to_string();
  EXPECT_EQ(back->n_mels, 64);
  EXPECT_EQ(back->normalize, NemoNormalize::kAllFeatures);
  EXPECT_EQ(back->log_guard, NemoLogGuard::kClamp);
  EXPECT_EQ(back->pad_to, 16);
  EXPECT_TRUE(back->reflect_pad);
  EXPECT_DOUBLE_EQ(back->log_zero_guard_value, config.log_zero_guard_value);
  auto bad = NemoFeatureConfig::from_metadata({{"voxrt.nemo.n_mels", "eighty"}});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("voxrt.nemo.n_mels"), std::string::npos);
  auto normalize = NemoFeatureConfig::from_metadata({{"voxrt.nemo.normalize", "fixed_mean"}});
  ASSERT_FALSE(normalize.has_value());
  EXPECT_NE(normalize.status().message().find("per_feature, all_features or NA"),
            std::string::npos);
  EXPECT_EQ(*nemo_normalize_from_name(""), NemoNormalize::kNone);  // sherpa-onnx's "no"
}

TEST(NemoFeatures, PerFeatureNormalisationGivesZeroMeanUnitStdPerBin) {
  NemoFeatureConfig config;
  config.n_mels = 40;
  auto computer = NemoFeatureComputer::create(config);
  ASSERT_TRUE(computer.has_value());
  std::vector<float> samples = tone(8000, 300.0);
  const std::vector<float> high = tone(8000, 2500.0);
  samples.insert(samples.end(), high.begin(), high.end());
  auto f = computer->compute(samples);
  ASSERT_TRUE(f.has_value()) << f.status().to_string();
  EXPECT_EQ(f->frames, 101);
  for (int m = 0; m < f->n_mels; ++m) {
    double sum = 0, squares = 0;
    for (int t = 0; t < f->frames; ++t)
      sum += f->values[static_cast<std::size_t>(m * f->frames + t)];
    const double mean = sum / f->frames;
    for (int t = 0; t < f->frames; ++t) {
      const double d = f->values[static_cast<std::size_t>(m * f->frames + t)] - mean;
      squares += d * d;
    }
    EXPECT_NEAR(mean, 0.0, 1e-5) << m;
    EXPECT_NEAR(std::sqrt(squares / (f->frames - 1)), 1.0, 1e-3) << m;
  }
}

TEST(NemoFeatures, PadToFillsWithThePadValueAndBadInputIsAnError) {
  NemoFeatureConfig config;
  config.pad_to = 16;
  config.pad_value = -5.0;
  config.normalize = NemoNormalize::kNone;
  auto computer = NemoFeatureComputer::create(config);
  ASSERT_TRUE(computer.has_value());
  auto f = computer->compute(tone(1600, 500.0));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->frames, 11);
  EXPECT_EQ(f->padded_frames, 16);
  EXPECT_EQ(f->values[static_cast<std::size_t>(f->padded_frames - 1)], -5.0f);
  EXPECT_FALSE(computer->compute({}).has_value());
  // One sample, one frame: normalisation over one frame has no spread and must not give NaN.
  config.normalize = NemoNormalize::kPerFeature;
  config.pad_to = 0;
  auto single = NemoFeatureComputer::create(config)->compute(std::vector<float>{0.5f});
  ASSERT_TRUE(single.has_value());
  for (float v : single->values) EXPECT_TRUE(std::isfinite(v));
  NemoFeatureConfig bad;
  bad.window_stride_s = 0.0;
  EXPECT_FALSE(NemoFeatureComputer::create(bad).has_value());
}

}  // namespace
}  // namespace voxrt::audio
