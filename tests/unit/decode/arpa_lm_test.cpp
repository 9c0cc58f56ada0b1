#include <gtest/gtest.h>

#include <cmath>

#include "decode/arpa_lm.h"
#include "decode_test_support.h"

namespace voxrt::decode {
namespace {

constexpr double kLn10 = 2.302585092994046;

constexpr const char* kTrigram = R"(some header text that ARPA files may carry

\data\
ngram 1=5
ngram 2=4
ngram 3=2

\1-grams:
-99	<s>	-0.5
-1.0	</s>
-0.7	a	-0.25
-0.9	b	-0.4
-1.3	<unk>

\2-grams:
-0.2	<s> a	-0.1
-0.4	a b	-0.3
-0.6	b a
-0.5	b </s>

\3-grams:
-0.05	<s> a b
-0.15	a b </s>
\end\
)";

TEST(ArpaLm, ScoresWithBackoffInNaturalLog) {
  auto lm = ArpaLm::parse(kTrigram, "trigram.arpa");
  ASSERT_TRUE(lm) << lm.status().to_string();
  EXPECT_EQ(lm->order(), 3);
  EXPECT_EQ(lm->ngram_count(), 11u);
  ArpaLm::State state = lm->sentence_start();
  ArpaLm::State next;
  // P(a | <s>): the bigram.
  EXPECT_NEAR(lm->score(state, "a", next), -0.2 * kLn10, 1e-5);
  state = next;
  // P(b | <s> a): the trigram.
  EXPECT_NEAR(lm->score(state, "b", next), -0.05 * kLn10, 1e-5);
  state = next;
  // P(a | a b): no trigram; backoff(a b) + P(a | b) = -0.3 + -0.6.
  EXPECT_NEAR(lm->score(state, "a", next), (-0.3 - 0.6) * kLn10, 1e-5);
  state = next;
  // P(a | b a): no trigram, "b a" has no backoff listed (0), no bigram "a a":
  // 0 + backoff(a) + P(a) = -0.25 + -0.7.
  EXPECT_NEAR(lm->score(state, "a", next), (-0.25 - 0.7) * kLn10, 1e-5);
  // An unknown word scores as <unk>, after backoff(a).
  state = next;
  EXPECT_NEAR(lm->score(state, "zebra", next), (-0.25 - 1.3) * kLn10, 1e-5);
  // </s> after "a b": the trigram.
  ArpaLm::State ab;
  lm->score(lm->sentence_start(), "a", next);
  lm->score(next, "b", ab);
  EXPECT_NEAR(lm->sentence_end_score(ab), -0.15 * kLn10, 1e-5);
}

TEST(ArpaLm, UnigramModelWithoutUnk) {
  auto lm = ArpaLm::parse("\\data\\\nngram 1=2\n\\1-grams:\n-0.5 hello\n-1 </s>\n\\end\\\n",
                          "unigram.arpa");
  ASSERT_TRUE(lm) << lm.status().to_string();
  ArpaLm::State next;
  EXPECT_NEAR(lm->score({}, "hello", next), -0.5 * kLn10, 1e-5);
  EXPECT_TRUE(next.empty());
  EXPECT_FLOAT_EQ(lm->score({}, "world", next), lm->unknown_word_log_prob());
}

TEST(ArpaLm, BrokenFilesAreErrorsWithLineNumbers) {
  auto expect_error = [](const std::string& text, const std::string& says) {
    auto lm = ArpaLm::parse(text, "bad.arpa");
    ASSERT_FALSE(lm) << "accepted: " << text;
    EXPECT_NE(lm.status().message().find(says), std::string::npos) << lm.status().message();
  };
  expect_error("", "expected a \\data\\ section");
  expect_error("\\data\\\nngram 1=2\n\\1-grams:\n-1 a\n-1 </s>\n", "expected \\end\\");
  expect_error("\\data\\\nngram 1=3\n\\1-grams:\n-1 a\n-1 </s>\n\\end\\\n",
               "declares 3 1-grams, found 2");
  expect_error("\\data\\\nngram 1=1\n\\1-grams:\nfoo a\n\\end\\\n", "bad.arpa:4: expected a log10");
  expect_error(
      "\\data\\\nngram 1=1\nngram 2=1\n\\1-grams:\n-1 </s>\n\\2-grams:\n-1 </s> x\n\\end\\\n",
      "'x', which has no unigram");
  expect_error("\\data\\\nngram 1=1\n\\1-grams:\n-1 a b c\n\\end\\\n", "found 4 fields");
  expect_error("\\data\\\nngram 1=1\n\\1-grams:\n-1 a\n\\end\\\n", "</s>");
  expect_error("\\data\\\nngram 2=1\n", "expected 'ngram 1=COUNT'");
  EXPECT_FALSE(ArpaLm::load("/nonexistent.arpa"));
}

TEST(ArpaLm, LoadsFromFile) {
  const std::string path = (testing::scratch_dir() / "trigram.arpa").string();
  {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    ASSERT_NE(file, nullptr);
    std::fputs(kTrigram, file);
    std::fclose(file);
  }
  auto lm = ArpaLm::load(path);
  ASSERT_TRUE(lm) << lm.status().to_string();
  EXPECT_EQ(lm->order(), 3);
}

}  // namespace
}  // namespace voxrt::decode
