// The stateful (NeMo LSTM) transducer searches on scripted networks whose answers are worked out
// by hand from NeMo's greedy rules (GreedyRNNTInfer, GreedyTDTInfer): the state is the count of
// units emitted so far, the joiner's choice a table over (frame, units emitted); max symbols per
// frame, TDT durations (0 keeps the frame, a blank with duration 0 moves one frame, the extra
// frame after max_symbols), batches whose streams have different lengths, hotwords in greedy
// search, beam merging; the TDT
// beam search (decode/stateful_tdt_beam.h): width 1 = greedy, hypotheses that reach one frame by
// different durations merge, a stream's result alone = in a batch.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "decode/stateful_tdt_beam.h"
#include "decode/stateful_transducer_beam.h"
#include "decode/stateful_transducer_search.h"

namespace voxrt::decode {
namespace {

constexpr int kBlank = 6;

// Units 0..5 are "a".."f", 6 the blank (NeMo's: last).
std::shared_ptr<const Vocabulary> units() {
  auto v = Vocabulary::pieces({"a", "b", "c", "d", "e", "f", "<blk>"}, kBlank);
  return std::make_shared<const Vocabulary>(std::move(v).value());
}

// The state is one float: units emitted so far. The decoder's output is (last unit, state); the
// next state is state + 1. Encoder frames are 1-wide: the frame's index. The joiner picks the
// table's (unit, duration) for (frame, emitted), else (blank, duration 1).
class ScriptedNetworks : public StatefulTransducerNetworks {
 public:
  std::map<std::pair<int, int>, std::pair<int, int>> script;  // (frame, emitted) -> (unit, dur)
  std::vector<int> duration_values;                           // empty: RNN-T
  int joiner_calls = 0;

  int vocab_size() const override { return kBlank + 1; }
  int blank_id() const override { return kBlank; }
  const std::vector<int>& durations() const override { return duration_values; }
  int state_size() const override { return 1; }
  int decoder_dim() const override { return 2; }
  int encoder_dim() const override { return 1; }
  Status run_decoder(std::span<const std::int64_t> units, std::span<const float> states, int rows,
                     std::vector<float>& out, std::vector<float>& next) override {
    out.clear();
    next.clear();
    for (int r = 0; r < rows; ++r) {
      out.push_back(static_cast<float>(units[r]));
      out.push_back(states[r]);
      next.push_back(states[r] + 1.0f);
    }
    return Status::ok();
  }
  Status run_joiner(std::span<const float> encoder, std::span<const float> decoder, int rows,
                    std::vector<float>& logits) override {
    ++joiner_calls;
    logits.clear();
    for (int r = 0; r < rows; ++r) {
      const int frame = static_cast<int>(encoder[r]);
      const int emitted = static_cast<int>(decoder[2 * r + 1]);
      auto it = script.find({frame, emitted});
      const auto [unit, duration] = it != script.end() ? it->second : std::make_pair(kBlank, 1);
      for (int k = 0; k <= kBlank; ++k) logits.push_back(k == unit ? 5.0f : 0.0f);
      for (std::size_t d = 0; d < duration_values.size(); ++d)
        logits.push_back(duration_values[d] == duration ? 5.0f : 0.0f);
    }
    return Status::ok();
  }
};

std::vector<float> frames(int n) {
  std::vector<float> f;
  for (int t = 0; t < n; ++t) f.push_back(static_cast<float>(t));
  return f;
}

std::vector<std::pair<int, long long>> ids_and_frames(const DecodingResult& r) {
  std::vector<std::pair<int, long long>> out;
  for (const TokenSpan& t : r.tokens) out.emplace_back(t.id, t.start_frame);
  return out;
}

using Emitted = std::vector<std::pair<int, long long>>;

TEST(StatefulTransducerGreedy, RnntEmitsUpToMaxSymbolsPerFrame) {
  ScriptedNetworks nets;
  // Frame 0: a, b, then blank. Frame 1: blank. Frame 2: c whatever was emitted.
  nets.script = {
      {{0, 0}, {0, 0}}, {{0, 1}, {1, 0}}, {{2, 2}, {2, 0}}, {{2, 3}, {2, 0}}, {{2, 4}, {2, 0}}};
  StatefulTransducerStreamSearch s(units(), TimeBase{}, 2, 1);
  StatefulTransducerStreamSearch* streams[] = {&s};
  const auto f = frames(3);
  const int valid[] = {3};
  ASSERT_TRUE(stateful_transducer_greedy(nets, streams, f.data(), 3, valid).is_ok());
  // Frame 2 stops after max_symbols (2) units.
  EXPECT_EQ(ids_and_frames(s.finalize()), (Emitted{{0, 0}, {1, 0}, {2, 2}, {2, 2}}));
}

TEST(StatefulTransducerGreedy, TdtAdvancesByDurationsAsNemo) {
  for (int max_symbols : {2, 3}) {
    SCOPED_TRACE(max_symbols);
    ScriptedNetworks nets;
    nets.duration_values = {0, 1, 2};
    nets.script = {{{0, 0}, {0, 0}},                         // a, stay
                   {{0, 1}, {1, 2}},                         // b, two frames on
                   {{2, 2}, {4, 1}},                         // e
                   {{3, 2}, {kBlank, 0}},                    // blank of duration 0: one frame on
                   {{3, 3}, {kBlank, 0}}, {{4, 2}, {3, 1}},  // d
                   {{4, 3}, {3, 1}}};
    StatefulTransducerStreamSearch s(units(), TimeBase{}, max_symbols, 1);
    StatefulTransducerStreamSearch* streams[] = {&s};
    const auto f = frames(5);
    const int valid[] = {5};
    ASSERT_TRUE(stateful_transducer_greedy(nets, streams, f.data(), 5, valid).is_ok());
    // max_symbols 2: a and b use frame 0's two steps, so after b's 2 frames NeMo moves one more
    // (to 3): frame 2 is never seen. With 3, frame 2 is.
    const Emitted want = max_symbols == 2 ? Emitted{{0, 0}, {1, 0}, {3, 4}}
                                          : Emitted{{0, 0}, {1, 0}, {4, 2}, {3, 4}};
    EXPECT_EQ(ids_and_frames(s.finalize()), want);
  }
}

TEST(StatefulTransducerGreedy, StreamsOfABatchAreIndependent) {
  ScriptedNetworks nets;
  nets.script = {{{0, 0}, {0, 0}}, {{1, 1}, {5, 0}}, {{3, 2}, {2, 0}}};
  auto alone = [&](int length) {
    StatefulTransducerStreamSearch s(units(), TimeBase{}, 10, 1);
    StatefulTransducerStreamSearch* streams[] = {&s};
    const auto f = frames(4);
    const int valid[] = {length};
    EXPECT_TRUE(stateful_transducer_greedy(nets, streams, f.data(), 4, valid).is_ok());
    return ids_and_frames(s.finalize());
  };
  const Emitted short_one = alone(2);
  const Emitted long_one = alone(4);
  EXPECT_EQ(short_one, (Emitted{{0, 0}, {5, 1}}));
  EXPECT_EQ(long_one, (Emitted{{0, 0}, {5, 1}, {2, 3}}));
  StatefulTransducerStreamSearch a(units(), TimeBase{}, 10, 1);
  StatefulTransducerStreamSearch b(units(), TimeBase{}, 10, 1);
  StatefulTransducerStreamSearch* both[] = {&a, &b};
  std::vector<float> f = frames(4);
  const auto second = frames(4);
  f.insert(f.end(), second.begin(), second.end());
  const int valid[] = {4, 2};
  ASSERT_TRUE(stateful_transducer_greedy(nets, both, f.data(), 4, valid).is_ok());
  EXPECT_EQ(ids_and_frames(a.finalize()), long_one);
  EXPECT_EQ(ids_and_frames(b.finalize()), short_one);
  // The state carries into the next chunk; frames keep counting.
  const int more[] = {2, 0};
  ASSERT_TRUE(stateful_transducer_greedy(nets, both, f.data(), 4, more).is_ok());
  EXPECT_EQ(a.trailing_blank_frames(), 2);
}

// Hotwords in greedy search: every frame's best unit is the blank (5 against 0), the phrase
// "b c" earns 6 per unit, so b (log-probability -5.01, +6) beats the blank (-0.01); then c extends
// the match; the completed phrase restarts matching, so b wins again on frame 2, unfinished at
// the end: finalize takes its bonus back. A stream without hotwords in the same batch stays empty.
TEST(StatefulTransducerGreedy, HotwordsLetAPhraseWinAndLeaveOtherStreamsAlone) {
  ScriptedNetworks nets;
  auto graph = ContextGraph::build({{1, 2}}, 6.0f);
  ASSERT_TRUE(graph.has_value()) << graph.status().to_string();
  auto hotwords = std::make_shared<const ContextGraph>(std::move(*graph));
  StatefulTransducerStreamSearch plain(units(), TimeBase{}, 1, 1);
  StatefulTransducerStreamSearch boosted(units(), TimeBase{}, 1, 1, hotwords);
  StatefulTransducerStreamSearch* both[] = {&plain, &boosted};
  std::vector<float> f = frames(3);
  const auto second = frames(3);
  f.insert(f.end(), second.begin(), second.end());
  const int valid[] = {3, 3};
  ASSERT_TRUE(stateful_transducer_greedy(nets, both, f.data(), 3, valid).is_ok());
  EXPECT_TRUE(plain.finalize().tokens.empty());
  const DecodingResult r = boosted.finalize();
  EXPECT_EQ(ids_and_frames(r), (Emitted{{1, 0}, {2, 1}, {1, 2}}));
  const double unit_log_prob = -std::log(std::exp(5.0) + 6.0);
  EXPECT_NEAR(r.score, 3 * unit_log_prob + 12.0, 1e-4);
  // A new utterance starts matching at the root again (b wins its first frame).
  boosted.reset_utterance();
  StatefulTransducerStreamSearch* alone[] = {&boosted};
  const int one[] = {1};
  ASSERT_TRUE(stateful_transducer_greedy(nets, alone, f.data(), 3, one).is_ok());
  EXPECT_EQ(ids_and_frames(boosted.partial()), (Emitted{{1, 3}}));
}

// Two frames of evenly split probability between a and blank: the beam keeps both, extensions
// with the same units merge (log-add), and the best is the merged one.
TEST(StatefulTransducerBeam, MergesEqualUnitSequences) {
  class Split : public ScriptedNetworks {
   public:
    Status run_joiner(std::span<const float>, std::span<const float> decoder, int rows,
                      std::vector<float>& logits) override {
      logits.clear();
      for (int r = 0; r < rows; ++r) {
        const bool emitted = decoder[2 * r + 1] > 0.5f;
        // Before any unit: a or blank, even odds; after one: blank (a little c).
        for (int k = 0; k <= kBlank; ++k)
          logits.push_back(!emitted ? (k == 0 || k == kBlank ? 0.0f : -20.0f)
                                    : (k == kBlank ? 0.0f : (k == 2 ? -3.0f : -20.0f)));
      }
      return Status::ok();
    }
  } nets;
  StatefulTransducerBeamSearch s(units(), TimeBase{}, 4, 1, 1);
  StatefulTransducerBeamSearch* streams[] = {&s};
  const auto f = frames(2);
  const int valid[] = {2};
  ASSERT_TRUE(stateful_transducer_beam(nets, streams, f.data(), 2, valid).is_ok());
  const auto r = s.finalize();
  // "a" comes from (a, then blank: 0.5 x p) and (blank, then a: 0.25), merged; alone either
  // path would score less.
  const double p_blank_after_a = 1.0 / (1.0 + std::exp(-3.0) + 5.0 * std::exp(-20.0));
  EXPECT_EQ(r.text, "a");
  EXPECT_NEAR(std::exp(r.score), 0.5 * p_blank_after_a + 0.25, 1e-5);
}

// The greedy TDT script above (durations, a blank of duration 0, the extra frame after
// max_symbols): the TDT beam search of width 1 emits the same units at the same frames, with the
// same confidences and word times.
TEST(StatefulTdtBeam, WidthOneIsTheGreedySearch) {
  for (int max_symbols : {1, 2, 3}) {
    SCOPED_TRACE(max_symbols);
    ScriptedNetworks nets;
    nets.duration_values = {0, 1, 2};
    nets.script = {{{0, 0}, {0, 0}},      {{0, 1}, {1, 2}}, {{2, 2}, {4, 1}}, {{3, 2}, {kBlank, 0}},
                   {{3, 3}, {kBlank, 0}}, {{4, 2}, {3, 1}}, {{4, 3}, {3, 1}}, {{1, 1}, {5, 0}}};
    StatefulTransducerStreamSearch greedy(units(), TimeBase{}, max_symbols, 1);
    StatefulTransducerStreamSearch* g[] = {&greedy};
    StatefulTransducerBeamSearch beam(units(), TimeBase{}, 1, max_symbols, 1);
    StatefulTransducerBeamSearch* b[] = {&beam};
    const auto f = frames(5);
    const int valid[] = {5};
    ASSERT_TRUE(stateful_transducer_greedy(nets, g, f.data(), 5, valid).is_ok());
    ASSERT_TRUE(stateful_transducer_beam(nets, b, f.data(), 5, valid).is_ok());
    const DecodingResult want = greedy.finalize();
    const DecodingResult got = beam.finalize();
    EXPECT_FALSE(want.tokens.empty());
    EXPECT_EQ(ids_and_frames(got), ids_and_frames(want));
    // The same confidences (each unit's log-softmax over the unit logits) and word times.
    ASSERT_EQ(got.tokens.size(), want.tokens.size());
    for (std::size_t i = 0; i < want.tokens.size(); ++i)
      EXPECT_NEAR(got.tokens[i].peak_log_posterior, want.tokens[i].peak_log_posterior, 1e-6);
    ASSERT_EQ(got.words.size(), want.words.size());
    for (std::size_t i = 0; i < want.words.size(); ++i) {
      EXPECT_EQ(got.words[i].start_s, want.words[i].start_s);
      EXPECT_EQ(got.words[i].end_s, want.words[i].end_s);
      EXPECT_NEAR(got.words[i].confidence, want.words[i].confidence, 1e-6);
    }
  }
}

// Frame 0 gives the blank with durations 1 and 2 at even odds; frame 1 the blank for one frame;
// frame 2 "a" for one frame. The hypothesis that waited at frame 2 and the one that got there
// from frame 1 have the same (no) units at the same frame: they merge, so "a" scores ~1, where
// either path alone scores 0.5.
TEST(StatefulTdtBeam, PathsOfDifferentDurationsToOneFrameMerge) {
  class Split : public StatefulTransducerNetworks {
   public:
    std::vector<int> duration_values{0, 1, 2};
    int vocab_size() const override { return kBlank + 1; }
    int blank_id() const override { return kBlank; }
    const std::vector<int>& durations() const override { return duration_values; }
    int state_size() const override { return 1; }
    int decoder_dim() const override { return 1; }
    int encoder_dim() const override { return 1; }
    Status run_decoder(std::span<const std::int64_t>, std::span<const float> states, int rows,
                       std::vector<float>& out, std::vector<float>& next) override {
      out.assign(states.begin(), states.begin() + rows);
      next.assign(states.begin(), states.begin() + rows);
      return Status::ok();
    }
    Status run_joiner(std::span<const float> encoder, std::span<const float>, int rows,
                      std::vector<float>& logits) override {
      logits.clear();
      for (int r = 0; r < rows; ++r) {
        const int frame = static_cast<int>(encoder[r]);
        const int unit = frame == 2 ? 0 : kBlank;
        for (int k = 0; k <= kBlank; ++k) logits.push_back(k == unit ? 0.0f : -30.0f);
        // Durations 0, 1, 2: frame 0 splits between 1 and 2, the others take 1.
        logits.insert(logits.end(), {-30.0f, 0.0f, frame == 0 ? 0.0f : -30.0f});
      }
      return Status::ok();
    }
  } nets;
  StatefulTransducerBeamSearch s(units(), TimeBase{}, 4, 10, 1);
  StatefulTransducerBeamSearch* streams[] = {&s};
  const auto f = frames(3);
  const int valid[] = {3};
  ASSERT_TRUE(stateful_transducer_beam(nets, streams, f.data(), 3, valid).is_ok());
  const auto r = s.finalize();
  EXPECT_EQ(r.text, "a");
  EXPECT_EQ(ids_and_frames(r), (Emitted{{0, 2}}));
  EXPECT_NEAR(std::exp(r.score), 1.0, 1e-6);
}

// Streams of different lengths in one batch give what they give alone (width 3).
TEST(StatefulTdtBeam, StreamsOfABatchAreIndependent) {
  ScriptedNetworks nets;
  nets.duration_values = {0, 1, 2};
  nets.script = {{{0, 0}, {0, 0}}, {{0, 1}, {1, 2}}, {{2, 2}, {4, 1}}, {{3, 2}, {2, 1}}};
  const auto f = frames(5);
  auto alone = [&](int length) {
    StatefulTransducerBeamSearch s(units(), TimeBase{}, 3, 10, 1);
    StatefulTransducerBeamSearch* streams[] = {&s};
    const int valid[] = {length};
    EXPECT_TRUE(stateful_transducer_beam(nets, streams, f.data(), 5, valid).is_ok());
    return ids_and_frames(s.finalize());
  };
  const Emitted short_one = alone(2);
  const Emitted long_one = alone(5);
  EXPECT_NE(short_one, long_one);
  StatefulTransducerBeamSearch a(units(), TimeBase{}, 3, 10, 1);
  StatefulTransducerBeamSearch b(units(), TimeBase{}, 3, 10, 1);
  StatefulTransducerBeamSearch* both[] = {&a, &b};
  std::vector<float> two = f;
  two.insert(two.end(), f.begin(), f.end());
  const int valid[] = {2, 5};
  ASSERT_TRUE(stateful_transducer_beam(nets, both, two.data(), 5, valid).is_ok());
  EXPECT_EQ(ids_and_frames(a.finalize()), short_one);
  EXPECT_EQ(ids_and_frames(b.finalize()), long_one);
}

}  // namespace
}  // namespace voxrt::decode
