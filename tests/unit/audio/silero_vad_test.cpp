// The model-free half of Silero VAD: the framer (512-sample windows with the 64-sample context
// of the previous window) and the segmenter (onset/offset hysteresis, minimum speech and silence,
// padding) on constructed probabilities with known answers. The model runs in tests/e2e.
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "audio/silero_vad.h"

namespace voxrt::audio {
namespace {

constexpr std::int64_t kWindow = 512;

// Probabilities for `windows` windows: `value` inside [first, last), `outside` elsewhere.
std::vector<float> square(int windows, int first, int last, float value, float outside = 0.02f) {
  std::vector<float> p(static_cast<std::size_t>(windows), outside);
  for (int w = first; w < last; ++w) p[static_cast<std::size_t>(w)] = value;
  return p;
}

TEST(SileroFramer, PrependsThePreviousWindowsTailAndPadsTheLast) {
  SileroVadConfig config;
  SileroFramer framer(config);
  std::vector<float> samples(1300);
  std::iota(samples.begin(), samples.end(), 1.0f);
  // Fed in odd pieces: windows do not depend on the chunking.
  framer.accept_waveform(std::span(samples.data(), 7));
  EXPECT_FALSE(framer.has_window());
  framer.accept_waveform(std::span(samples.data() + 7, samples.size() - 7));
  std::vector<float> window(static_cast<std::size_t>(config.model_input_samples()));
  ASSERT_TRUE(framer.has_window());
  EXPECT_TRUE(framer.pop_window(window.data()));
  for (int i = 0; i < 64; ++i) EXPECT_EQ(window[static_cast<std::size_t>(i)], 0.0f);
  EXPECT_EQ(window[64], 1.0f);
  EXPECT_EQ(window[575], 512.0f);
  ASSERT_TRUE(framer.has_window());
  EXPECT_TRUE(framer.pop_window(window.data()));
  EXPECT_EQ(window[0], 449.0f);  // samples 448..511 of the first window (1-based values)
  EXPECT_EQ(window[63], 512.0f);
  EXPECT_EQ(window[64], 513.0f);
  EXPECT_FALSE(framer.has_window());  // 276 samples left
  framer.input_finished();
  ASSERT_TRUE(framer.has_window());
  EXPECT_TRUE(framer.pop_window(window.data()));
  EXPECT_EQ(window[64], 1025.0f);
  EXPECT_EQ(window[64 + 275], 1300.0f);
  EXPECT_EQ(window[64 + 276], 0.0f);
  EXPECT_FALSE(framer.has_window());
  EXPECT_FALSE(framer.pop_window(window.data()));
  EXPECT_EQ(framer.samples_in(), 1300);
}

TEST(SpeechProbabilitySegmenter, FindsASquarePulseWithPadding) {
  SileroVadConfig config;  // onset 0.5, offset 0.35, min speech 250 ms, min silence 300 ms, pad 30
  const auto p = square(100, 20, 50, 0.9f);
  const auto segments = segments_from_probabilities(config, p, 100 * kWindow);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].start_sample, 20 * kWindow - 480);
  EXPECT_EQ(segments[0].end_sample, 50 * kWindow + 480);
}

// No event is dated before the point decided_until_sample() gave earlier, so the Recognizer
// can route the audio before it (random probabilities: onsets, short bursts, pauses).
TEST(SpeechProbabilitySegmenter, NoEventIsDatedBeforeTheDecidedPoint) {
  SileroVadConfig config;
  auto segmenter = SpeechProbabilitySegmenter::create(config);
  ASSERT_TRUE(segmenter);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<VadEvent> events;
  std::int64_t decided = 0;
  float p = 0.0f;
  for (int w = 0; w < 5000; ++w) {
    if (uniform(rng) < 0.08f) p = uniform(rng);  // runs of similar probabilities
    const std::size_t before = events.size();
    segmenter->accept(p, events);
    for (std::size_t e = before; e < events.size(); ++e) EXPECT_GE(events[e].sample, decided);
    const std::int64_t now = segmenter->decided_until_sample();
    EXPECT_GE(now, decided);
    EXPECT_LE(now, segmenter->samples_scored());
    decided = now;
  }
  EXPECT_GT(events.size(), 20u);
}

TEST(SpeechProbabilitySegmenter, ShortBurstsAreNotSpeech) {
  SileroVadConfig config;
  // 7 windows = 224 ms < 250 ms minimum speech; 8 windows = 256 ms is enough.
  EXPECT_TRUE(segments_from_probabilities(config, square(60, 10, 17, 0.95f), 60 * kWindow).empty());
  EXPECT_EQ(segments_from_probabilities(config, square(60, 10, 18, 0.95f), 60 * kWindow).size(),
            1u);
}

TEST(SpeechProbabilitySegmenter, ShortPausesDoNotSplitSpeech) {
  SileroVadConfig config;
  auto p = square(120, 10, 90, 0.9f);
  // A 9-window (288 ms) dip below the offset inside speech: one segment.
  for (int w = 40; w < 49; ++w) p[static_cast<std::size_t>(w)] = 0.1f;
  EXPECT_EQ(segments_from_probabilities(config, p, 120 * kWindow).size(), 1u);
  // A 10-window (320 ms) dip: two.
  p[49] = 0.1f;
  const auto two = segments_from_probabilities(config, p, 120 * kWindow);
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].end_sample, 40 * kWindow + 480);
  EXPECT_EQ(two[1].start_sample, 50 * kWindow - 480);
}

TEST(SpeechProbabilitySegmenter, HysteresisBetweenOnsetAndOffset) {
  SileroVadConfig config;
  // 0.4 is below the onset: never starts speech on its own.
  EXPECT_TRUE(segments_from_probabilities(config, square(80, 10, 60, 0.4f), 80 * kWindow).empty());
  // ...but once speech has started, 0.4 (above the offset) keeps it going.
  auto p = square(100, 10, 30, 0.9f);
  for (int w = 30; w < 70; ++w) p[static_cast<std::size_t>(w)] = 0.4f;
  const auto segments = segments_from_probabilities(config, p, 100 * kWindow);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].end_sample, 70 * kWindow + 480);
  // Raising the offset to 0.45 ends speech in the 0.4 stretch.
  config.offset_threshold = 0.45f;
  const auto earlier = segments_from_probabilities(config, p, 100 * kWindow);
  ASSERT_EQ(earlier.size(), 1u);
  EXPECT_EQ(earlier[0].end_sample, 30 * kWindow + 480);
}

TEST(SpeechProbabilitySegmenter, SpeechRunningToTheEndIsClosed) {
  SileroVadConfig config;
  const auto segments =
      segments_from_probabilities(config, square(40, 10, 40, 0.8f), 40 * 512 - 100);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].end_sample, 40 * 512 - 100);
}

TEST(SpeechProbabilitySegmenter, SilenceAndBadConfigs) {
  SileroVadConfig config;
  EXPECT_TRUE(
      segments_from_probabilities(config, std::vector<float>(500, 0.01f), 500 * kWindow).empty());
  SileroVadConfig bad;
  bad.offset_threshold = 0.6f;  // above the onset
  EXPECT_FALSE(SpeechProbabilitySegmenter::create(bad));
  bad = SileroVadConfig{};
  bad.sample_rate_hz = 44100;
  EXPECT_FALSE(SpeechProbabilitySegmenter::create(bad));
  bad = SileroVadConfig{};
  bad.min_silence_ms = -1;
  EXPECT_FALSE(SpeechProbabilitySegmenter::create(bad));
}

}  // namespace
}  // namespace voxrt::audio
