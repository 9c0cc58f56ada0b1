// SentencePiece units: a tiny model trained at test time with the library's trainer.
#include <gtest/gtest.h>
#include <sentencepiece_trainer.h>

#include <fstream>

#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

using testing::Frames;

// Trains once per process; `model_type` char keeps the pieces predictable (U+2581 and letters).
std::string train_model(const std::string& model_type, int vocab_size) {
  const std::string dir = testing::scratch_dir().string();
  const std::string corpus = dir + "/spm_corpus.txt";
  {
    std::ofstream out(corpus);
    const char* lines[] = {"the cat sat on the mat",
                           "hello world",
                           "the quick brown fox",
                           "jumps over the lazy dog",
                           "streaming speech recognition",
                           "a kat is not a cat",
                           "world of words",
                           "hello again world"};
    for (int repeat = 0; repeat < 20; ++repeat) {
      for (const char* line : lines) out << line << "\n";
    }
  }
  const std::string prefix = dir + "/spm_" + model_type;
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + corpus + " --model_prefix=" + prefix + " --model_type=" + model_type +
      " --vocab_size=" + std::to_string(vocab_size) +
      " --character_coverage=1.0 --minloglevel=2 --num_threads=1");
  EXPECT_TRUE(status.ok()) << status.ToString();
  return prefix + ".model";
}

std::shared_ptr<const Vocabulary> load(const std::string& model_path) {
  // CTC classes: <blank> first, then the model's pieces shifted by one (as wenet does).
  auto pieces = Vocabulary::sentencepiece(model_path, {}, 0);
  EXPECT_TRUE(pieces) << pieces.status().to_string();
  std::vector<std::string> tokens = {"<blank>"};
  for (int id = 0; id < pieces->size(); ++id) tokens.push_back(pieces->token(id));
  auto vocabulary = Vocabulary::sentencepiece(model_path, tokens, 0);
  EXPECT_TRUE(vocabulary) << vocabulary.status().to_string();
  return std::make_shared<const Vocabulary>(std::move(vocabulary).value());
}

Frames spell_units(const Vocabulary& vocabulary, const std::vector<int>& units) {
  Frames frames(vocabulary.size());
  for (int unit : units) frames.peak(unit).peak(vocabulary.blank_id());
  return frames;
}

TEST(SentencePiece, GreedyDetokenizesPiecesIntoWords) {
  auto vocabulary = load(train_model("unigram", 40));
  auto units = vocabulary->encode("hello world the cat");
  ASSERT_TRUE(units) << units.status().to_string();
  ASSERT_GE(units->size(), 2u);
  GreedyCtcDecoder decoder(vocabulary, TimeBase{4, 10.0});
  ASSERT_TRUE(decoder.accept(spell_units(*vocabulary, *units).view()));
  const DecodingResult result = decoder.finalize();
  EXPECT_EQ(result.text, "hello world the cat");
  ASSERT_EQ(result.words.size(), 4u);
  EXPECT_EQ(result.words[0].word, "hello");
  EXPECT_EQ(result.words[3].word, "cat");
  EXPECT_DOUBLE_EQ(result.words[0].start_s, 0.0);
  EXPECT_GT(result.words[1].start_s, result.words[0].end_s - 1e-9);
}

TEST(SentencePiece, LanguageModelScoresAtWordMarkers) {
  auto vocabulary = load(train_model("char", 30));
  auto cat = vocabulary->encode("the cat");
  auto kat = vocabulary->encode("the kat");
  ASSERT_TRUE(cat && kat);
  ASSERT_EQ(cat->size(), kat->size());
  Frames frames(vocabulary->size());
  for (std::size_t i = 0; i < cat->size(); ++i) {
    if ((*cat)[i] == (*kat)[i]) {
      frames.peak((*cat)[i]);
    } else {
      frames.add({{(*kat)[i], 0.55}, {(*cat)[i], 0.44}});
    }
    frames.peak(0);
  }
  auto plain = CtcPrefixBeamDecoder::create(vocabulary, {}, TimeBase{});
  ASSERT_TRUE(plain);
  ASSERT_TRUE(plain->accept(frames.view()));
  EXPECT_EQ(plain->finalize().text, "the kat");
  auto lm = ArpaLm::parse(
      "\\data\\\nngram 1=5\n\\1-grams:\n-1 <s>\n-1 </s>\n-1 the\n-1 cat\n-3 kat\n\\end\\\n",
      "sp.arpa");
  ASSERT_TRUE(lm) << lm.status().to_string();
  auto with_lm = CtcPrefixBeamDecoder::create(vocabulary, {}, TimeBase{},
                                              std::make_shared<const ArpaLm>(std::move(*lm)));
  ASSERT_TRUE(with_lm);
  ASSERT_TRUE(with_lm->accept(frames.view()));
  EXPECT_EQ(with_lm->finalize().text, "the cat");
}

TEST(SentencePiece, HotwordPhrasesEncodeToPieces) {
  auto vocabulary = load(train_model("unigram", 40));
  auto graph = ContextGraph::from_phrases(*vocabulary, {"quick brown", "lazy dog"}, 1.0f);
  ASSERT_TRUE(graph) << graph.status().to_string();
  EXPECT_GT(graph->node_count(), 2u);
}

TEST(SentencePiece, MissingModelIsAnError) {
  auto vocabulary = Vocabulary::sentencepiece("/nonexistent.model", {}, 0);
  ASSERT_FALSE(vocabulary);
  EXPECT_NE(vocabulary.status().message().find("/nonexistent.model"), std::string::npos);
  auto from_metadata = Vocabulary::from_metadata({{"voxrt.unit", "sentencepiece"}}, "/tmp");
  ASSERT_FALSE(from_metadata);
  EXPECT_NE(from_metadata.status().message().find("voxrt.sentencepiece_model"), std::string::npos);
}

}  // namespace
}  // namespace voxrt::decode
