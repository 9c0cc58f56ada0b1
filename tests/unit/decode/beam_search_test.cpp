#include <gtest/gtest.h>

#include <random>

#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

using testing::english_chars;
using testing::Frames;
using testing::spell;

std::shared_ptr<const ArpaLm> make_lm(const std::string& text) {
  auto lm = ArpaLm::parse(text, "test.arpa");
  if (!lm) {
    ADD_FAILURE() << lm.status().to_string();
    return nullptr;
  }
  return std::make_shared<const ArpaLm>(std::move(*lm));
}

CtcPrefixBeamDecoder make_decoder(std::shared_ptr<const Vocabulary> vocabulary,
                                  BeamSearchConfig config = {},
                                  std::shared_ptr<const ArpaLm> lm = nullptr,
                                  std::shared_ptr<const ContextGraph> hotwords = nullptr) {
  auto decoder =
      CtcPrefixBeamDecoder::create(std::move(vocabulary), config, TimeBase{}, lm, hotwords);
  EXPECT_TRUE(decoder) << decoder.status().to_string();
  return std::move(decoder).value();
}

// "the ?at" where frame 4 prefers 'k' (0.55) over 'c' (0.45): acoustically ambiguous.
Frames the_cat_or_kat(const Vocabulary& vocabulary) {
  Frames frames = spell(vocabulary, "the ");
  frames.add({{vocabulary.id_of("k"), 0.55}, {vocabulary.id_of("c"), 0.44}});
  frames.peak(0);
  for (char c : std::string("at")) {
    frames.peak(vocabulary.id_of(std::string(1, c)));
    frames.peak(0);
  }
  return frames;
}

TEST(PrefixBeam, SumsOverAlignmentsWhereGreedyCannot) {
  // Two frames of p(a) = 0.4, p(blank) = 0.6: the best path is blank blank (0.36), but "a" has
  // probability 0.16 + 0.24 + 0.24 = 0.64.
  auto vocabulary = english_chars();
  Frames frames(vocabulary->size());
  const int a = vocabulary->id_of("a");
  frames.add({{0, 0.6}, {a, 0.4 - 1e-9}}).add({{0, 0.6}, {a, 0.4 - 1e-9}});
  GreedyCtcDecoder greedy(vocabulary, TimeBase{});
  ASSERT_TRUE(greedy.accept(frames.view()));
  EXPECT_EQ(greedy.finalize().text, "");
  auto beam = make_decoder(vocabulary);
  ASSERT_TRUE(beam.accept(frames.view()));
  const DecodingResult result = beam.finalize();
  EXPECT_EQ(result.text, "a");
  EXPECT_NEAR(result.score, std::log(0.64), 1e-4);
}

TEST(PrefixBeam, EqualsGreedyOnPeakedPosteriorsWithoutLm) {
  auto vocabulary = english_chars();
  std::mt19937 rng(23);
  for (int trial = 0; trial < 20; ++trial) {
    Frames frames(vocabulary->size());
    std::uniform_int_distribution<int> unit(0, vocabulary->size() - 1);
    for (int t = 0; t < 150; ++t) frames.peak(unit(rng), 0.97);
    GreedyCtcDecoder greedy(vocabulary, TimeBase{});
    ASSERT_TRUE(greedy.accept(frames.view()));
    for (int width : {1, 8, 16}) {
      BeamSearchConfig config;
      config.beam_width = width;
      auto beam = make_decoder(vocabulary, config);
      // Fed in uneven chunks: streaming must not change the answer.
      for (int t = 0; t < frames.frames();) {
        const int n = std::min(frames.frames() - t, 1 + (t * 7) % 11);
        ASSERT_TRUE(beam.accept(frames.view(t, n)));
        t += n;
      }
      const DecodingResult result = beam.finalize();
      EXPECT_EQ(result.text, greedy.finalize().text) << "trial " << trial << " width " << width;
      // Token frames agree with the best path's.
      ASSERT_EQ(result.tokens.size(), greedy.finalize().tokens.size());
      for (std::size_t i = 0; i < result.tokens.size(); ++i) {
        EXPECT_EQ(result.tokens[i].start_frame, greedy.finalize().tokens[i].start_frame);
        EXPECT_EQ(result.tokens[i].end_frame, greedy.finalize().tokens[i].end_frame);
      }
    }
  }
}

TEST(PrefixBeam, ChunkedEqualsWholeOnFlatPosteriors) {
  auto vocabulary = english_chars();
  std::mt19937 rng(5);
  Frames frames(vocabulary->size());
  std::uniform_real_distribution<double> p(0.05, 0.5);
  std::uniform_int_distribution<int> unit(1, vocabulary->size() - 1);
  for (int t = 0; t < 120; ++t) frames.add({{0, p(rng)}, {unit(rng), 0.3}});
  auto whole = make_decoder(vocabulary);
  ASSERT_TRUE(whole.accept(frames.view()));
  auto chunked = make_decoder(vocabulary);
  for (int t = 0; t < frames.frames(); t += 8) {
    ASSERT_TRUE(chunked.accept(frames.view(t, std::min(8, frames.frames() - t))));
    EXPECT_FALSE(chunked.partial().is_final);
  }
  const DecodingResult a = whole.finalize();
  const DecodingResult b = chunked.finalize();
  EXPECT_EQ(a.text, b.text);
  EXPECT_EQ(a.score, b.score);
  EXPECT_FALSE(a.text.empty());
}

constexpr const char* kCatLm = R"(
\data\
ngram 1=6
ngram 2=3

\1-grams:
-1.0 <s> -0.3
-1.0 </s>
-1.2 the -0.2
-2.0 cat -0.1
-4.0 kat
-3.0 <unk>

\2-grams:
-0.3 <s> the
-0.2 the cat
-0.5 cat </s>

\end\
)";

TEST(PrefixBeam, LanguageModelPrefersTheLikelySpelling) {
  auto vocabulary = english_chars();
  const Frames frames = the_cat_or_kat(*vocabulary);
  auto plain = make_decoder(vocabulary);
  ASSERT_TRUE(plain.accept(frames.view()));
  EXPECT_EQ(plain.finalize().text, "the kat");

  BeamSearchConfig config;
  config.lm_weight = 0.5f;
  auto with_lm = make_decoder(vocabulary, config, make_lm(kCatLm));
  ASSERT_TRUE(with_lm.accept(frames.view()));
  const DecodingResult result = with_lm.finalize();
  EXPECT_EQ(result.text, "the cat");
  // The score is acoustic + 0.5 * ln P(the cat </s>) with P from the bigrams above.
  const double ln10 = std::log(10.0);
  const double lm_log_prob = (-0.3 - 0.2 - 0.5) * ln10;
  const double acoustic = std::log(std::pow(0.9, frames.frames() - 1) * 0.44);
  EXPECT_NEAR(result.score, acoustic + 0.5 * lm_log_prob, 0.02);

  // A weight of zero turns it off again.
  config.lm_weight = 0.0f;
  auto no_weight = make_decoder(vocabulary, config, make_lm(kCatLm));
  ASSERT_TRUE(no_weight.accept(frames.view()));
  EXPECT_EQ(no_weight.finalize().text, "the kat");
}

// A segment without speech (blank everywhere, a faint "a" in one frame) stays empty with an LM
// and a word bonus: "no sentence" is not scored as the empty sentence <s> </s>, whose LM
// probability is tiny and made "a" + bonus win (a lone "a" per noise segment in long streams).
TEST(PrefixBeam, SegmentWithoutSpeechStaysEmptyWithLmAndBonus) {
  auto vocabulary = english_chars();
  constexpr const char* kLm = R"(
\data\
ngram 1=4

\1-grams:
-1.0 <s> -0.3
-1.0 </s>
-1.5 a
-3.0 <unk>

\end\
)";
  Frames frames(vocabulary->size());
  frames.blanks(6, 0, 0.9999).add({{0, 0.99}, {vocabulary->id_of("a"), 0.01 - 1e-9}});
  frames.blanks(6, 0, 0.9999);
  BeamSearchConfig config;
  config.lm_weight = 1.0f;
  config.word_insertion_bonus = 9.0f;
  auto with_lm = make_decoder(vocabulary, config, make_lm(kLm));
  ASSERT_TRUE(with_lm.accept(frames.view()));
  // "a": ln 0.01 + ln10 * (-1.8 - 1.0) + 9 = -2.05; silence: 0, where charging
  // ln P(</s> | <s>) = ln10 * -1.3 = -2.99 would have lost to "a".
  const DecodingResult result = with_lm.finalize();
  EXPECT_EQ(result.text, "");
  EXPECT_NEAR(result.score, std::log(0.99) + 12 * std::log(0.9999), 0.01);
  // A clearly spoken "a" (0.9 in that frame) still wins.
  Frames spoken(vocabulary->size());
  spoken.blanks(6, 0, 0.9999).add({{0, 0.1}, {vocabulary->id_of("a"), 0.9 - 1e-9}});
  spoken.blanks(6, 0, 0.9999);
  auto again = make_decoder(vocabulary, config, make_lm(kLm));
  ASSERT_TRUE(again.accept(spoken.view()));
  EXPECT_EQ(again.finalize().text, "a");
}

TEST(PrefixBeam, HotwordChangesTheResult) {
  auto vocabulary = english_chars();
  const Frames frames = the_cat_or_kat(*vocabulary);
  auto graph = ContextGraph::from_phrases(*vocabulary, {"cat"}, 0.5f);
  ASSERT_TRUE(graph) << graph.status().to_string();
  auto boosted = make_decoder(vocabulary, {}, nullptr,
                              std::make_shared<const ContextGraph>(std::move(graph).value()));
  ASSERT_TRUE(boosted.accept(frames.view()));
  const DecodingResult result = boosted.finalize();
  EXPECT_EQ(result.text, "the cat");
}

TEST(PrefixBeam, UnfinishedHotwordMatchesAreTakenBack) {
  auto vocabulary = english_chars();
  const Frames frames = the_cat_or_kat(*vocabulary);
  auto plain = make_decoder(vocabulary);
  ASSERT_TRUE(plain.accept(frames.view()));
  const DecodingResult reference = plain.finalize();
  // "cab" matches "ca" then fails at "t", "the cats" is never completed: no net bonus.
  for (const char* phrase : {"cab", "the cats"}) {
    auto graph = ContextGraph::from_phrases(*vocabulary, {phrase}, 0.5f);
    ASSERT_TRUE(graph);
    auto boosted = make_decoder(vocabulary, {}, nullptr,
                                std::make_shared<const ContextGraph>(std::move(graph).value()));
    ASSERT_TRUE(boosted.accept(frames.view()));
    const DecodingResult result = boosted.finalize();
    EXPECT_EQ(result.text, "the kat") << phrase;
    // No bonus survives (a unit's bonus is 0.5, a kept partial match 1.0 or more); what is left
    // is the acoustic mass of alignments that boosted rivals pushed out of the beam.
    EXPECT_NEAR(result.score, reference.score, 0.01) << phrase;
  }
}

TEST(PrefixBeam, TimestampsAndConfidences) {
  auto vocabulary = english_chars();
  Frames frames(vocabulary->size());
  frames.blanks(10);  // 0-9
  for (char c : std::string("hi")) frames.peak(vocabulary->id_of(std::string(1, c)), 0.8).peak(0);
  frames.blanks(5).peak(1).blanks(3);  // space at frame 19
  frames.peak(vocabulary->id_of("y"), 0.6).peak(vocabulary->id_of("o"), 0.9).blanks(2);
  auto decoder = CtcPrefixBeamDecoder::create(vocabulary, {}, TimeBase{2, 10.0});
  ASSERT_TRUE(decoder);
  ASSERT_TRUE(decoder->accept(frames.view()));
  const DecodingResult result = decoder->finalize();
  ASSERT_EQ(result.text, "hi yo");
  ASSERT_EQ(result.words.size(), 2u);
  // h at 10, i at 12; subsampling 2 x 10 ms = 20 ms per frame.
  EXPECT_NEAR(result.words[0].start_s, 0.20, 1e-9);
  EXPECT_NEAR(result.words[0].end_s, 0.26, 1e-9);
  EXPECT_NEAR(result.words[0].confidence, 0.8, 1e-4);
  EXPECT_NEAR(result.words[1].start_s, 23 * 0.02, 1e-9);
  EXPECT_NEAR(result.words[1].end_s, 25 * 0.02, 1e-9);
  EXPECT_NEAR(result.words[1].confidence, 0.75, 1e-4);
  EXPECT_EQ(decoder->trailing_blank_frames(), 2);
}

TEST(PrefixBeam, BlankSkippingAndPruningKeepTheAnswer) {
  auto vocabulary = english_chars();
  Frames frames = spell(*vocabulary, "streaming works", 0.95);
  frames.blanks(40, 0, 0.9995);
  BeamSearchConfig config;
  config.blank_skip_log_prob = std::log(0.999f);
  config.unit_prune_log_prob = std::log(0.01f);
  config.max_units_per_frame = 4;
  auto decoder = make_decoder(vocabulary, config);
  ASSERT_TRUE(decoder.accept(frames.view()));
  EXPECT_EQ(decoder.finalize().text, "streaming works");
  BeamSearchConfig bad;
  bad.beam_width = 0;
  EXPECT_FALSE(CtcPrefixBeamDecoder::create(vocabulary, bad, TimeBase{}));
}

}  // namespace
}  // namespace voxrt::decode
