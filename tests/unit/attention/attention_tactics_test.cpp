// Every faster Attention tactic against the reference kernel: strips of four rows and their
// tails, decoder steps (one query), grouped heads, both layouts, masks of every broadcast with
// keys that are not a multiple of the vector width, causal cuts, fully masked rows, two threads.
#include <limits>

#include "attention_test_support.h"

namespace voxrt::attention_test {
namespace {

std::vector<backends::TacticId> fast_tactics() {
  std::vector<backends::TacticId> ids;
  AttentionCase probe;
  std::mt19937 rng(0);
  probe.q = random_f32({1, 1, 1, 4}, rng);
  probe.k = random_f32({1, 1, 1, 4}, rng);
  probe.v = random_f32({1, 1, 1, 4}, rng);
  SingleNode single = make_attention_node(probe);
  for (const auto& info : backends::cpu::tactics_for(*single.node))
    if (info.id != backends::kReferenceTactic) ids.push_back(info.id);
  return ids;
}

void expect_tactics_match_reference(const AttentionCase& c, int threads = 1) {
  auto reference = run_attention(c, backends::kReferenceTactic);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  const auto tactics = fast_tactics();
  if (tactics.empty()) GTEST_SKIP() << "no faster attention tactic on this CPU";
  for (backends::TacticId tactic : tactics) {
    auto fast = run_attention(c, tactic, threads);
    ASSERT_TRUE(fast.has_value()) << fast.status().to_string();
    EXPECT_TRUE(all_close(*fast, *reference, 2e-5, 2e-6)) << "tactic " << tactic;
  }
}

AttentionCase make_case(std::mt19937& rng, Dims q, Dims k, Dims v) {
  AttentionCase c;
  c.q = random_f32(q, rng);
  c.k = random_f32(k, rng);
  c.v = random_f32(v, rng);
  return c;
}

TEST(AttentionTactics, StripsAndTailsOverOddKeyCounts) {
  std::mt19937 rng(21);
  for (std::int64_t sq : {1, 3, 4, 7, 70}) {
    for (std::int64_t sk : {1, 15, 17, 80, 131}) {
      expect_tactics_match_reference(
          make_case(rng, {2, 3, sq, 64}, {2, 3, sk, 64}, {2, 3, sk, 64}));
    }
  }
}

TEST(AttentionTactics, OddDepthsGroupedHeadsAndSequenceMajor) {
  std::mt19937 rng(22);
  expect_tactics_match_reference(make_case(rng, {1, 4, 9, 20}, {1, 2, 33, 20}, {1, 2, 33, 70}));
  AttentionCase c = make_case(rng, {2, 13, 4, 16}, {2, 29, 4, 16}, {2, 29, 4, 16});
  c.attrs.set("qkv_layout", std::int64_t{1});
  expect_tactics_match_reference(c);
}

TEST(AttentionTactics, MasksBiasAndCausal) {
  std::mt19937 rng(23);
  AttentionCase c = make_case(rng, {2, 4, 16, 64}, {2, 4, 80, 64}, {2, 4, 80, 64});
  c.mask = random_bool({2, 1, 1, 80}, rng, 0.8);
  c.bias = random_f32({1, 4, 16, 80}, rng, -2.0f, 2.0f);
  expect_tactics_match_reference(c);
  c.attrs.set("mask_fill", -10000.0f);
  expect_tactics_match_reference(c);
  c.attrs = {};
  c.mask = random_f32({16, 80}, rng, -3.0f, 0.0f);
  c.bias = random_f32({80}, rng);  // broadcast along queries
  c.attrs.set("causal", std::int64_t{1});
  c.attrs.set("scale", 0.2f);
  expect_tactics_match_reference(c);
  // A mask whose key stride is not 1: [Sk, 1] broadcast against [Sq = Sk ... ] is not allowed,
  // so take a transposed-looking [B, H, Sq, 1] that broadcasts along the keys instead.
  c.attrs = {};
  c.mask = random_bool({2, 4, 16, 1}, rng, 0.7);
  c.bias.reset();
  expect_tactics_match_reference(c);
}

TEST(AttentionTactics, FullyMaskedRowsAndDecoderSteps) {
  std::mt19937 rng(24);
  AttentionCase c = make_case(rng, {1, 2, 6, 32}, {1, 2, 40, 32}, {1, 2, 40, 32});
  Tensor mask = Tensor::zeros(DType::kBool, {6, 40});
  for (int j = 0; j < 40; ++j) mask.data<bool>()[2 * 40 + j] = true;  // only row 2 sees keys
  c.mask = mask;
  expect_tactics_match_reference(c);
  AttentionCase causal = make_case(rng, {1, 2, 6, 32}, {1, 2, 3, 32}, {1, 2, 3, 32});
  causal.attrs.set("causal", std::int64_t{1});
  expect_tactics_match_reference(causal);
  // Causal with strips that see different numbers of keys (70 queries: 11 strips of 6 rows and
  // one of 4), one and two threads.
  AttentionCase square = make_case(rng, {1, 2, 70, 32}, {1, 2, 70, 32}, {1, 2, 70, 48});
  square.attrs.set("causal", std::int64_t{1});
  expect_tactics_match_reference(square);
  expect_tactics_match_reference(square, 2);
  // A decoder step: one query against 65 cached keys, 8 heads, two threads.
  expect_tactics_match_reference(make_case(rng, {1, 8, 1, 64}, {1, 8, 65, 64}, {1, 8, 65, 64}), 2);
  // Whisper-size strip work split over two threads.
  expect_tactics_match_reference(make_case(rng, {1, 2, 150, 64}, {1, 2, 150, 64}, {1, 2, 150, 64}),
                                 2);
}

}  // namespace
}  // namespace voxrt::attention_test
