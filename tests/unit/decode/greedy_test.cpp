#include <gtest/gtest.h>

#include <random>

#include "decode/ctc_greedy.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

using testing::english_chars;
using testing::Frames;

TEST(GreedyCtc, MergesRepeatsAndDropsBlanks) {
  auto vocabulary = english_chars();
  auto id = [&](char c) { return vocabulary->id_of(std::string(1, c)); };
  Frames frames(vocabulary->size());
  // _ h h e _ l l _ l o o _ " " w
  for (int unit : {0, id('h'), id('h'), id('e'), 0, id('l'), id('l'), 0, id('l'), id('o'), id('o'),
                   0, 1, id('w')}) {
    frames.peak(unit);
  }
  GreedyCtcDecoder decoder(vocabulary, TimeBase{4, 10.0});
  ASSERT_TRUE(decoder.accept(frames.view()));
  const DecodingResult result = decoder.finalize();
  EXPECT_EQ(result.text, "hello w");
  ASSERT_EQ(result.tokens.size(), 7u);
  // 'h' spans frames 1-2, the second 'l' is frame 8, 'o' 9-10.
  EXPECT_EQ(result.tokens[0].start_frame, 1);
  EXPECT_EQ(result.tokens[0].end_frame, 2);
  EXPECT_EQ(result.tokens[3].start_frame, 8);
  EXPECT_EQ(result.tokens[4].end_frame, 10);
  ASSERT_EQ(result.words.size(), 2u);
  EXPECT_EQ(result.words[0].word, "hello");
  // Frames x subsampling 4 x 10 ms: starts at frame 1, ends after frame 10.
  EXPECT_DOUBLE_EQ(result.words[0].start_s, 0.04);
  EXPECT_DOUBLE_EQ(result.words[0].end_s, 0.44);
  EXPECT_NEAR(result.words[0].confidence, 0.9, 1e-5);
  EXPECT_EQ(result.words[1].word, "w");
  EXPECT_DOUBLE_EQ(result.words[1].start_s, 13 * 0.04);
}

// Word times are moved back by the model's emission delays, never below 0, never a word's start
// before the previous word's end, and a word lasts at least one output frame.
TEST(GreedyCtc, WordTimesAreCorrectedForTheModelsDelay) {
  auto vocabulary = english_chars();
  auto id = [&](char c) { return vocabulary->id_of(std::string(1, c)); };
  Frames frames(vocabulary->size());
  // Frames of 40 ms: "ab" at frames 2-3, " " at 5, "cd" at 6-7.
  for (int unit : {0, 0, id('a'), id('b'), 0, 1, id('c'), id('d'), 0}) frames.peak(unit);
  TimeBase time_base{4, 10.0};
  time_base.word_start_delay_s = 0.10;
  time_base.word_end_delay_s = 0.01;
  GreedyCtcDecoder decoder(vocabulary, time_base);
  ASSERT_TRUE(decoder.accept(frames.view()));
  const DecodingResult result = decoder.finalize();
  ASSERT_EQ(result.words.size(), 2u);
  EXPECT_EQ(result.words[0].start_s, 0.0);  // 0.08 - 0.10, clamped
  EXPECT_NEAR(result.words[0].end_s, 0.16 - 0.01, 1e-9);
  // "cd" would start at 0.24 - 0.10 = 0.14, before "ab" ends at 0.15: it starts there.
  EXPECT_NEAR(result.words[1].start_s, 0.15, 1e-9);
  EXPECT_NEAR(result.words[1].end_s, 0.32 - 0.01, 1e-9);
  time_base.word_end_delay_s = 0.5;  // larger than the word: it ends one frame after its start
  GreedyCtcDecoder late(vocabulary, time_base);
  ASSERT_TRUE(late.accept(frames.view()));
  const DecodingResult late_result = late.finalize();
  ASSERT_EQ(late_result.words.size(), 2u);
  for (const WordResult& word : late_result.words)
    EXPECT_NEAR(word.end_s, word.start_s + 0.04, 1e-9) << word.word;
  EXPECT_GE(late_result.words[1].start_s, late_result.words[0].end_s);
}

TEST(GreedyCtc, ChunkedEqualsWholeAndBatchEqualsSingle) {
  auto vocabulary = english_chars();
  std::mt19937 rng(17);
  constexpr int kStreams = 5;
  constexpr int kFrames = 97;
  std::vector<float> batch_values;
  std::vector<std::string> expected;
  for (int b = 0; b < kStreams; ++b) {
    Frames frames(vocabulary->size());
    std::uniform_int_distribution<int> unit(0, vocabulary->size() - 1);
    std::uniform_real_distribution<double> confidence(0.3, 0.99);
    for (int t = 0; t < kFrames; ++t) frames.peak(unit(rng), confidence(rng));
    GreedyCtcDecoder whole(vocabulary, TimeBase{});
    ASSERT_TRUE(whole.accept(frames.view()));
    GreedyCtcDecoder chunked(vocabulary, TimeBase{});
    for (int t = 0; t < kFrames;) {
      const int n = std::min(kFrames - t, 1 + t % 7);
      ASSERT_TRUE(chunked.accept(frames.view(t, n)));
      // A partial at any time is a prefix of the final text's tokens.
      EXPECT_LE(chunked.partial().tokens.size(), whole.partial().tokens.size());
      t += n;
    }
    EXPECT_EQ(chunked.finalize().text, whole.finalize().text);
    EXPECT_EQ(chunked.finalize().tokens.size(), whole.finalize().tokens.size());
    expected.push_back(whole.finalize().text);
    batch_values.insert(batch_values.end(), frames.values().begin(), frames.values().end());
  }
  std::vector<GreedyCtcDecoder> decoders(kStreams, GreedyCtcDecoder(vocabulary, TimeBase{}));
  std::vector<GreedyCtcDecoder*> pointers;
  for (auto& decoder : decoders) pointers.push_back(&decoder);
  const BatchLogProbView batch{batch_values.data(), kStreams, kFrames, vocabulary->size()};
  ASSERT_TRUE(greedy_accept_batch(batch, pointers));
  for (int b = 0; b < kStreams; ++b) EXPECT_EQ(decoders[b].finalize().text, expected[b]);
}

TEST(GreedyCtc, WrongShapesAreErrors) {
  auto vocabulary = english_chars();
  GreedyCtcDecoder decoder(vocabulary, TimeBase{});
  std::vector<float> values(10, 0.0f);
  const Status status = decoder.accept({values.data(), 1, 10});
  ASSERT_FALSE(status);
  EXPECT_NE(status.message().find("expected log-probs over 29 units, found 10"), std::string::npos);
  std::vector<GreedyCtcDecoder*> none;
  EXPECT_FALSE(greedy_accept_batch({values.data(), 1, 1, 29}, none));
}

}  // namespace
}  // namespace voxrt::decode
