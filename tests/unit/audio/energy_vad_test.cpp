// Energy VAD on real speech: espeak-ng and flite sentences with silences spliced in by sox at
// known places (optionally under noise), and the pocketsphinx recordings.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>

#include "audio/audio_io.h"
#include "audio/energy_vad.h"
#include "audio_test_support.h"

namespace voxrt::audio {
namespace {

using testing::run_command;
using testing::scratch_dir;

constexpr double kToleranceS = 0.150;

struct SplicedRecording {
  std::string path;
  // Where the speech is, in seconds, by construction.
  std::vector<std::pair<double, double>> speech_s;
};

double duration_s(const std::string& path) {
  auto clip = read_audio_file(path);
  return clip ? static_cast<double>(clip->samples.size()) / clip->sample_rate_hz : -1.0;
}

// Synthesises two sentences, trims each to its speech with sox, and lays them out as
// silence(1.0) A silence(1.5) B silence(1.0); with noise_db < 0 white noise at that level is
// mixed over everything.
std::optional<SplicedRecording> make_recording(const std::string& name, double noise_db) {
  const std::string dir = scratch_dir().string() + "/";
  const std::string a = dir + name + "_a.wav";
  const std::string b = dir + name + "_b.wav";
  if (run_command("espeak-ng -w " + dir + name +
                  "_a_raw.wav 'the quick brown fox jumps over "
                  "the lazy dog' > /dev/null 2>&1") != 0 ||
      run_command("flite -t 'speech recognition works in small chunks of audio' -o " + dir + name +
                  "_b_raw.wav > /dev/null 2>&1") != 0) {
    return std::nullopt;
  }
  // Trim to the speech itself (first/last sample above 0.1% of full scale), at 16 kHz mono.
  const std::string trim =
      " rate 16k channels 1 silence 1 0.005 0.1% reverse silence 1 0.005 0.1% reverse";
  if (run_command("sox " + dir + name + "_a_raw.wav " + a + trim) != 0 ||
      run_command("sox " + dir + name + "_b_raw.wav " + b + trim) != 0) {
    return std::nullopt;
  }
  const std::string silence = " -r 16000 -c 1 -b 16 ";
  for (const auto& [file, seconds] : {std::pair{"sil1", 1.0}, std::pair{"sil15", 1.5}}) {
    if (run_command("sox -n" + silence + dir + name + "_" + file + ".wav trim 0 " +
                    std::to_string(seconds)) != 0) {
      return std::nullopt;
    }
  }
  const std::string clean = dir + name + "_clean.wav";
  if (run_command("sox " + dir + name + "_sil1.wav " + a + " " + dir + name + "_sil15.wav " + b +
                  " " + dir + name + "_sil1.wav -b 16 " + clean) != 0) {
    return std::nullopt;
  }
  const double a_s = duration_s(a);
  const double b_s = duration_s(b);
  SplicedRecording recording{clean, {{1.0, 1.0 + a_s}, {2.5 + a_s, 2.5 + a_s + b_s}}};
  if (noise_db < 0) {
    const std::string noise = dir + name + "_noise.wav";
    const std::string noisy = dir + name + "_noisy.wav";
    const double total = duration_s(clean);
    if (run_command("sox -n" + silence + noise + " synth " + std::to_string(total) +
                    " whitenoise vol " + std::to_string(std::pow(10.0, noise_db / 20.0))) != 0 ||
        run_command("sox -m -v 1 " + clean + " -v 1 " + noise + " -b 16 " + noisy) != 0) {
      return std::nullopt;
    }
    recording.path = noisy;
  }
  return recording;
}

bool tools_available() {
  return run_command("(command -v espeak-ng && command -v flite && command -v sox) > /dev/null") ==
         0;
}

void expect_segments_match(const SplicedRecording& recording, const EnergyVadConfig& config) {
  auto clip = read_audio_file(recording.path);
  ASSERT_TRUE(clip) << clip.status().to_string();
  auto segments = detect_speech(config, clip->samples);
  ASSERT_TRUE(segments) << segments.status().to_string();
  std::string found;
  for (const SpeechSegment& s : *segments) {
    found += " [" + std::to_string(s.start_sample / 16000.0) + ", " +
             std::to_string(s.end_sample / 16000.0) + ")";
  }
  ASSERT_EQ(segments->size(), recording.speech_s.size()) << recording.path << ":" << found;
  for (std::size_t i = 0; i < segments->size(); ++i) {
    const double start_s = (*segments)[i].start_sample / 16000.0;
    const double end_s = (*segments)[i].end_sample / 16000.0;
    EXPECT_NEAR(start_s, recording.speech_s[i].first, kToleranceS) << recording.path << found;
    EXPECT_NEAR(end_s, recording.speech_s[i].second, kToleranceS) << recording.path << found;
  }
}

TEST(EnergyVad, FindsSynthesisedSpeechBetweenSplicedSilences) {
  if (!tools_available()) GTEST_SKIP() << "espeak-ng, flite or sox missing";
  auto recording = make_recording("tts", 0.0);
  ASSERT_TRUE(recording) << "synthesis or sox failed";
  expect_segments_match(*recording, EnergyVadConfig{});
}

// White noise whose peak is -60 / -50 dBFS (RMS about 4.8 dB lower). Louder noise buries the
// first 150 ms of flite's "speech" (an /s/ at -63..-49 dBFS), which is then found late.
TEST(EnergyVad, FindsSynthesisedSpeechUnderNoise) {
  if (!tools_available()) GTEST_SKIP() << "espeak-ng, flite or sox missing";
  for (double noise_db : {-60.0, -50.0}) {
    auto recording =
        make_recording("tts_noise" + std::to_string(static_cast<int>(-noise_db)), noise_db);
    ASSERT_TRUE(recording) << "synthesis or sox failed";
    SCOPED_TRACE("noise " + std::to_string(noise_db) + " dBFS");
    expect_segments_match(*recording, EnergyVadConfig{});
  }
}

TEST(EnergyVad, EventsDoNotDependOnChunking) {
  if (!tools_available()) GTEST_SKIP() << "espeak-ng, flite or sox missing";
  auto recording = make_recording("tts_chunks", -45.0);
  ASSERT_TRUE(recording);
  auto clip = read_audio_file(recording->path);
  ASSERT_TRUE(clip);
  auto run = [&](auto next_size) {
    auto vad = EnergyVad::create(EnergyVadConfig{});
    std::vector<VadEvent> events;
    for (std::size_t position = 0; position < clip->samples.size();) {
      const std::size_t n = std::min(next_size(), clip->samples.size() - position);
      vad->accept_waveform(std::span(clip->samples.data() + position, n), events);
      position += n;
    }
    vad->input_finished(events);
    std::vector<std::int64_t> flat;
    for (const VadEvent& e : events)
      flat.push_back(e.sample * 2 + (e.kind == VadEvent::Kind::kSpeechEnd));
    return flat;
  };
  std::mt19937 rng(3);
  std::uniform_int_distribution<std::size_t> size(1, 999);
  const auto whole = run([&] { return clip->samples.size(); });
  EXPECT_EQ(whole.size(), 4u);
  EXPECT_EQ(whole, run([] { return std::size_t{320}; }));
  EXPECT_EQ(whole, run([&] { return size(rng); }));
}

// The Recognizer routes a chunk once the VAD has decided about it: no event found later may be
// dated before what decided_until_sample() said, whatever the piece size.
TEST(EnergyVad, NoEventIsDatedBeforeTheDecidedPoint) {
  if (!tools_available()) GTEST_SKIP() << "espeak-ng, flite or sox missing";
  auto recording = make_recording("tts_decided", -45.0);
  ASSERT_TRUE(recording);
  auto clip = read_audio_file(recording->path);
  ASSERT_TRUE(clip);
  for (std::size_t piece : {std::size_t{7}, std::size_t{160}, std::size_t{16000}}) {
    auto vad = EnergyVad::create(EnergyVadConfig{});
    std::vector<VadEvent> events;
    std::int64_t decided = 0;
    for (std::size_t position = 0; position < clip->samples.size(); position += piece) {
      const std::size_t n = std::min(piece, clip->samples.size() - position);
      const std::size_t before = events.size();
      vad->accept_waveform(std::span(clip->samples.data() + position, n), events);
      for (std::size_t e = before; e < events.size(); ++e)
        EXPECT_GE(events[e].sample, decided) << "piece " << piece << " event " << e;
      const std::int64_t now = vad->decided_until_sample();
      EXPECT_GE(now, decided);  // never goes back
      EXPECT_LE(now, static_cast<std::int64_t>(position + n));
      decided = now;
    }
    EXPECT_EQ(events.size(), 4u);  // two segments, each closed by its silence
  }
}

TEST(EnergyVad, PocketsphinxRecordingsHaveSpeech) {
  const auto wavs = testing::pocketsphinx_wavs();
  ASSERT_FALSE(wavs.empty());
  for (const std::string& path : wavs) {
    auto clip = read_audio_file(path);
    ASSERT_TRUE(clip);
    auto segments = detect_speech(EnergyVadConfig{}, clip->samples);
    ASSERT_TRUE(segments);
    ASSERT_FALSE(segments->empty()) << path;
    std::int64_t speech_samples = 0;
    for (const SpeechSegment& s : *segments) {
      EXPECT_LT(s.start_sample, s.end_sample);
      EXPECT_LE(s.end_sample, static_cast<std::int64_t>(clip->samples.size()));
      speech_samples += s.end_sample - s.start_sample;
    }
    const double fraction = static_cast<double>(speech_samples) / clip->samples.size();
    EXPECT_GT(fraction, 0.3) << path;
    EXPECT_LE(fraction, 1.0) << path;
  }
}

TEST(EnergyVad, SilenceAndBadConfigs) {
  auto segments = detect_speech(EnergyVadConfig{}, std::vector<float>(48000, 0.0f));
  ASSERT_TRUE(segments);
  EXPECT_TRUE(segments->empty());
  EnergyVadConfig bad;
  bad.hysteresis_db = bad.threshold_db + 1;
  EXPECT_FALSE(EnergyVad::create(bad));
  bad = EnergyVadConfig{};
  bad.frame_ms = 0;
  EXPECT_FALSE(EnergyVad::create(bad));
}

}  // namespace
}  // namespace voxrt::audio
