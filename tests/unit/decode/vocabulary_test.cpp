#include <gtest/gtest.h>

#include "decode/context_graph.h"
#include "decode/vocabulary.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

TEST(Vocabulary, FromMetadataCharacters) {
  auto vocabulary = Vocabulary::from_metadata({{"voxrt.vocabulary", "_\n \na\nb\nc\n"},
                                               {"voxrt.blank_id", "0"},
                                               {"voxrt.unit", "char"},
                                               {"voxrt.word_boundary", " "}},
                                              "");
  ASSERT_TRUE(vocabulary) << vocabulary.status().to_string();
  EXPECT_EQ(vocabulary->size(), 5);
  EXPECT_EQ(vocabulary->word_boundary_id(), 1);
  const std::vector<int> ids = {1, 2, 3, 1, 1, 4, 2, 1};
  EXPECT_EQ(vocabulary->detokenize(ids), "ab ca");
  const auto words = vocabulary->split_words(ids);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[1].text, "ca");
  EXPECT_EQ(words[1].first_token, 5);
  EXPECT_EQ(words[1].last_token, 6);
  auto encoded = vocabulary->encode("ab c");
  ASSERT_TRUE(encoded);
  EXPECT_EQ(*encoded, (std::vector<int>{2, 3, 1, 4}));
  auto unknown = vocabulary->encode("abz");
  ASSERT_FALSE(unknown);
  EXPECT_NE(unknown.status().message().find("byte 2"), std::string::npos);
}

TEST(Vocabulary, BadMetadataIsAnError) {
  EXPECT_FALSE(Vocabulary::from_metadata({}, ""));
  EXPECT_FALSE(
      Vocabulary::from_metadata({{"voxrt.vocabulary", "_\na"}, {"voxrt.blank_id", "7"}}, ""));
  EXPECT_FALSE(
      Vocabulary::from_metadata({{"voxrt.vocabulary", "_\na"}, {"voxrt.unit", "bpe"}}, ""));
  EXPECT_FALSE(
      Vocabulary::from_metadata({{"voxrt.vocabulary", "_\na"}, {"voxrt.blank_id", "x"}}, ""));
}

TEST(ContextGraph, BonusesAndFailureLinks) {
  // Phrases "abc" and "bd": reading "a b d" matches "ab", fails at "d", falls back to "b" -> "bd".
  auto graph = ContextGraph::build({{1, 2, 3}, {2, 4}}, 1.0f);
  ASSERT_TRUE(graph);
  int state = ContextGraph::kRoot;
  float total = 0.0f;
  total += graph->forward(state, 1, state);  // a: +1
  EXPECT_FLOAT_EQ(total, 1.0f);
  total += graph->forward(state, 2, state);  // ab: +1
  EXPECT_FLOAT_EQ(total, 2.0f);
  total += graph->forward(state, 4, state);  // fail to "b", then "bd" completes: score of bd = 2
  EXPECT_FLOAT_EQ(total, 2.0f);
  EXPECT_EQ(state, ContextGraph::kRoot);
  EXPECT_FLOAT_EQ(graph->finalize(state), 0.0f);
  // An unmatched unit takes back a partial match.
  state = ContextGraph::kRoot;
  total = graph->forward(state, 1, state) + graph->forward(state, 2, state);
  total += graph->forward(state, 9, state);
  EXPECT_FLOAT_EQ(total, 0.0f);
  // finalize() takes back a partial match at the end.
  state = ContextGraph::kRoot;
  total = graph->forward(state, 1, state);
  EXPECT_FLOAT_EQ(total + graph->finalize(state), 0.0f);
  EXPECT_FALSE(ContextGraph::build({{}}, 1.0f));
}

}  // namespace
}  // namespace voxrt::decode
