// The lexicon-constrained beam (issue 31): with the LM's words as the lexicon, a spelling the
// acoustics prefer but no word has cannot win; and hotword phrases are normalised to the units.
#include <gtest/gtest.h>

#include "decode/ctc_prefix_beam.h"
#include "decode/lexicon.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

using testing::english_chars;
using testing::Frames;
using testing::spell;

TEST(Lexicon, WordsAndPrefixes) {
  Lexicon lexicon({"music", "play", "plays", "some", "play"});
  EXPECT_EQ(lexicon.size(), 4u);
  EXPECT_TRUE(lexicon.contains("play"));
  EXPECT_FALSE(lexicon.contains("pla"));
  EXPECT_TRUE(lexicon.has_prefix("pla"));
  EXPECT_TRUE(lexicon.has_prefix(""));
  EXPECT_FALSE(lexicon.has_prefix("plx"));
  EXPECT_FALSE(lexicon.has_prefix("musics"));
  auto lm = ArpaLm::parse(
      "\\data\\\nngram 1=4\n\n\\1-grams:\n-1 <s>\n-1 </s>\n-1 <unk>\n-0.5 cat\n\n\\end\\\n",
      "t.arpa");
  ASSERT_TRUE(lm) << lm.status().to_string();
  const Lexicon from_lm = Lexicon::from_lm(*lm);
  EXPECT_EQ(from_lm.size(), 1u);
  EXPECT_TRUE(from_lm.contains("cat"));
}

// "the ?at" where the acoustics prefer "kat" (0.55 against 0.44): without a lexicon the beam
// (even with a unigram LM that has "cat" and <unk>) can keep the non-word; with it, only "cat".
TEST(Lexicon, ASpelledNonWordCannotWin) {
  auto vocabulary = english_chars();
  Frames frames = spell(*vocabulary, "the ");
  frames.add({{vocabulary->id_of("k"), 0.55}, {vocabulary->id_of("c"), 0.44}});
  frames.peak(0);
  for (char c : std::string("at")) {
    frames.peak(vocabulary->id_of(std::string(1, c)));
    frames.peak(0);
  }
  auto lm = ArpaLm::parse(
      "\\data\\\nngram 1=5\n\n\\1-grams:\n-1 <s>\n-1 </s>\n-1.2 <unk>\n-1 the\n-1 cat\n\n"
      "\\end\\\n",
      "t.arpa");
  ASSERT_TRUE(lm) << lm.status().to_string();
  auto shared_lm = std::make_shared<const ArpaLm>(std::move(*lm));
  BeamSearchConfig config;
  config.lm_weight = 0.1f;  // too weak to overturn the acoustics on its own
  auto free_spelling = CtcPrefixBeamDecoder::create(vocabulary, config, TimeBase{}, shared_lm);
  ASSERT_TRUE(free_spelling);
  ASSERT_TRUE(free_spelling->accept(frames.view()));
  EXPECT_EQ(free_spelling->finalize().text, "the kat");
  auto lexicon = std::make_shared<const Lexicon>(Lexicon::from_lm(*shared_lm));
  auto constrained =
      CtcPrefixBeamDecoder::create(vocabulary, config, TimeBase{}, shared_lm, nullptr, lexicon);
  ASSERT_TRUE(constrained);
  ASSERT_TRUE(constrained->accept(frames.view()));
  EXPECT_EQ(constrained->partial().text, "the cat");
  EXPECT_EQ(constrained->finalize().text, "the cat");
  EXPECT_FALSE(CtcPrefixBeamDecoder::create(vocabulary, config, TimeBase{}, shared_lm, nullptr,
                                            std::make_shared<const Lexicon>(Lexicon({}))));
}

TEST(Vocabulary, HotwordPhrasesAreNormalisedToTheUnits) {
  auto vocabulary = english_chars();  // a-z, space, apostrophe: no uppercase, no punctuation
  EXPECT_EQ(vocabulary->normalise_phrase("  Turn ON the T.V.!  "), "turn on the t v");
  EXPECT_EQ(vocabulary->normalise_phrase("Rock-n-Roll, baby"), "rock n roll baby");
  EXPECT_EQ(vocabulary->normalise_phrase("don't"), "don't");  // the apostrophe is a unit
  EXPECT_EQ(vocabulary->normalise_phrase("?!"), "");
  // Not ASCII punctuation: kept, so encoding says what the units cannot spell.
  EXPECT_EQ(vocabulary->normalise_phrase("Café"), "caf\xC3\xA9");
  EXPECT_FALSE(vocabulary->encode(vocabulary->normalise_phrase("Café")));
  // A vocabulary with uppercase units keeps the case.
  auto cased = Vocabulary::characters({"_", " ", "A", "a", "."}, 0, " ");
  ASSERT_TRUE(cased);
  EXPECT_EQ(cased->normalise_phrase("A. a!"), "A. a");
  // Units in capitals only (icefall's LibriSpeech BPE, as a transducer bundle has them): the
  // phrase goes to capitals and is then spelled by the pieces.
  auto capitals = Vocabulary::pieces({"<blk>", "\xE2\x96\x81TURN", "\xE2\x96\x81ON", "S"}, 0);
  ASSERT_TRUE(capitals);
  EXPECT_EQ(capitals->normalise_phrase("Turn on!"), "TURN ON");
  EXPECT_TRUE(capitals->encode(capitals->normalise_phrase("Turn on!")));
}

}  // namespace
}  // namespace voxrt::decode
