#include <gtest/gtest.h>

#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode/endpoint.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

using testing::english_chars;
using testing::Frames;
using testing::spell;

// 10 ms output frames (subsampling 1) keep the arithmetic readable: 100 frames per second.
constexpr TimeBase kTime{1, 10.0};

EndpointDetector detector(EndpointConfig config = {}) {
  auto made = EndpointDetector::create(config, kTime);
  EXPECT_TRUE(made) << made.status().to_string();
  return std::move(made).value();
}

TEST(Endpoint, KaldiRulesOnCounters) {
  const EndpointDetector endpoint = detector();
  EXPECT_EQ(endpoint.detect(239, 239, false), EndpointReason::kNone);
  EXPECT_EQ(endpoint.detect(240, 240, false), EndpointReason::kRule1TrailingSilence);
  EXPECT_EQ(endpoint.detect(500, 119, true), EndpointReason::kNone);
  EXPECT_EQ(endpoint.detect(500, 120, true), EndpointReason::kRule2TrailingSilenceAfterSpeech);
  EXPECT_EQ(endpoint.detect(1999, 0, true), EndpointReason::kNone);
  EXPECT_EQ(endpoint.detect(2000, 0, true), EndpointReason::kRule3MaxUtteranceLength);
  EXPECT_EQ(endpoint.detect(10, 0, true, true), EndpointReason::kVadEndOfSpeech);
  EndpointConfig no_vad;
  no_vad.use_vad_endpoint = false;
  EXPECT_EQ(detector(no_vad).detect(10, 0, true, true), EndpointReason::kNone);
  EndpointConfig bad;
  bad.rule2.min_trailing_silence_s = -1;
  EXPECT_FALSE(EndpointDetector::create(bad, kTime));
}

// A stream of two utterances separated by 1.5 s of blanks: rule2 ends the first, the decoder
// resets, and the second utterance's timestamps continue from where the stream is.
template <typename Decoder>
void two_utterances(Decoder& decoder) {
  auto vocabulary = english_chars();
  Frames all = spell(*vocabulary, "hello");  // frames 0-9
  all.blanks(150);                           // 10-159
  all.append(spell(*vocabulary, "world"));   // 160-169
  all.blanks(130);
  const EndpointDetector endpoint = detector();
  std::vector<DecodingResult> finals;
  std::vector<long long> endpoint_frames;
  for (int t = 0; t < all.frames(); t += 2) {  // 20 ms chunks of 10 ms frames
    ASSERT_TRUE(decoder.accept(all.view(t, std::min(2, all.frames() - t))));
    const EndpointReason reason = endpoint.detect(
        decoder.utterance_frames(), decoder.trailing_blank_frames(), decoder.has_tokens());
    if (reason != EndpointReason::kNone) {
      EXPECT_EQ(reason, EndpointReason::kRule2TrailingSilenceAfterSpeech);
      finals.push_back(decoder.finalize());
      endpoint_frames.push_back(decoder.frames_seen());
      decoder.reset_utterance();
    }
  }
  ASSERT_EQ(finals.size(), 2u);
  EXPECT_EQ(finals[0].text, "hello");
  EXPECT_EQ(finals[1].text, "world");
  // The last unit of "hello" is frame 8: 120 trailing blank frames are complete after frame 128,
  // and the check runs after each 2-frame chunk, so the endpoint comes after frame 129.
  EXPECT_EQ(endpoint_frames[0], 130);
  ASSERT_EQ(finals[1].words.size(), 1u);
  // "world" starts at stream frame 160: 1.6 s, not 0.3 s into its utterance.
  EXPECT_NEAR(finals[1].words[0].start_s, 1.60, 1e-9);
  EXPECT_NEAR(finals[1].words[0].end_s, 1.69, 1e-9);
}

TEST(Endpoint, GreedyStreamSplitsIntoUtterances) {
  GreedyCtcDecoder decoder(english_chars(), kTime);
  two_utterances(decoder);
}

TEST(Endpoint, BeamStreamSplitsIntoUtterances) {
  auto decoder = CtcPrefixBeamDecoder::create(english_chars(), {}, kTime);
  ASSERT_TRUE(decoder);
  two_utterances(*decoder);
}

TEST(Endpoint, Rule1OnSilenceAndRule3OnEndlessSpeech) {
  auto vocabulary = english_chars();
  GreedyCtcDecoder decoder(vocabulary, kTime);
  const EndpointDetector endpoint = detector();
  Frames silence(vocabulary->size());
  silence.blanks(300);
  long long fired_at = -1;
  for (int t = 0; t < silence.frames() && fired_at < 0; ++t) {
    ASSERT_TRUE(decoder.accept(silence.view(t, 1)));
    if (endpoint.detect(decoder.utterance_frames(), decoder.trailing_blank_frames(),
                        decoder.has_tokens()) == EndpointReason::kRule1TrailingSilence) {
      fired_at = decoder.frames_seen();
    }
  }
  EXPECT_EQ(fired_at, 240);
  decoder.reset_utterance();
  Frames speech(vocabulary->size());
  for (int t = 0; t < 2100; ++t) speech.peak(1 + t % 28);  // never blank
  EndpointReason reason = EndpointReason::kNone;
  long long utterance_frames = 0;
  for (int t = 0; t < speech.frames() && reason == EndpointReason::kNone; ++t) {
    ASSERT_TRUE(decoder.accept(speech.view(t, 1)));
    utterance_frames = decoder.utterance_frames();
    reason =
        endpoint.detect(utterance_frames, decoder.trailing_blank_frames(), decoder.has_tokens());
  }
  EXPECT_EQ(reason, EndpointReason::kRule3MaxUtteranceLength);
  EXPECT_EQ(utterance_frames, 2000);
}

}  // namespace
}  // namespace voxrt::decode
