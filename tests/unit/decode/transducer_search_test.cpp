// The transducer searches on hand-made networks with known answers: a joiner whose logits are a
// table indexed by (encoder frame value, last unit), so what each search must emit is worked out
// by hand; batching, max symbols per frame, beam merging, hotwords, trailing blanks, resets.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "decode/transducer_search.h"

namespace voxrt::decode {
namespace {

// Units: 0 blank, 1 <unk>, 2 "▁A", 3 "B", 4 "▁C".
std::shared_ptr<const Vocabulary> pieces() {
  auto v = Vocabulary::pieces({"<blk>", "<unk>",
                               "\xE2\x96\x81"
                               "A",
                               "B",
                               "\xE2\x96\x81"
                               "C"},
                              0);
  return std::make_shared<const Vocabulary>(std::move(v).value());
}

// Encoder frames are 1-wide: the value is a "frame kind". The decoder output is the last unit of
// the context. The joiner gives log-probabilities from the table (kind, last unit) -> unit
// probabilities; unlisted pairs put everything on blank.
class TableNetworks : public TransducerNetworks {
 public:
  std::map<std::pair<int, int>, std::vector<double>> table;
  int decoder_calls = 0;
  int joiner_calls = 0;
  int decoder_rows = 0;

  int context_size() const override { return 2; }
  int vocab_size() const override { return 5; }
  int blank_id() const override { return 0; }
  int decoder_dim() const override { return 1; }
  int encoder_dim() const override { return 1; }
  Status run_decoder(std::span<const std::int64_t> contexts, int rows,
                     std::vector<float>& out) override {
    ++decoder_calls;
    decoder_rows += rows;
    out.clear();
    for (int r = 0; r < rows; ++r) out.push_back(static_cast<float>(contexts[r * 2 + 1]));
    return Status::ok();
  }
  Status run_joiner(std::span<const float> encoder, std::span<const float> decoder, int rows,
                    std::vector<float>& logits) override {
    ++joiner_calls;
    logits.clear();
    for (int r = 0; r < rows; ++r) {
      auto it = table.find({static_cast<int>(encoder[r]), static_cast<int>(decoder[r])});
      std::vector<double> p = it != table.end() ? it->second : std::vector<double>{1, 0, 0, 0, 0};
      for (double v : p) logits.push_back(static_cast<float>(std::log(std::max(v, 1e-9))));
    }
    return Status::ok();
  }
};

TransducerStreamSearch make(TransducerSearchKind kind, int max_symbols = 1, int beam = 4,
                            std::shared_ptr<const ContextGraph> hotwords = nullptr) {
  TransducerSearchConfig config;
  config.max_symbols_per_frame = max_symbols;
  config.beam_width = beam;
  return TransducerStreamSearch(pieces(), TimeBase{4, 10.0}, kind, config, 2, hotwords);
}

std::vector<int> ids(const DecodingResult& r) {
  std::vector<int> out;
  for (const auto& t : r.tokens) out.push_back(t.id);
  return out;
}

TEST(TransducerSearch, GreedyEmitsTheBestUnitPerFrameWithTimesAndConfidences) {
  TableNetworks nets;
  // Kind 1 after blank (start context ends in blank) -> "▁A" (0.9); kind 2 after "▁A" -> "B".
  nets.table[{1, 0}] = {0.1, 0, 0.9, 0, 0};
  nets.table[{2, 2}] = {0.2, 0, 0, 0.8, 0};
  auto s = make(TransducerSearchKind::kGreedy);
  TransducerStreamSearch* streams[] = {&s};
  const std::vector<float> frames = {0, 1, 0, 2, 0};
  const int valid[] = {5};
  ASSERT_TRUE(transducer_search_chunk(nets, streams, frames.data(), 5, valid).is_ok());
  const DecodingResult r = s.finalize();
  EXPECT_EQ(ids(r), (std::vector<int>{2, 3}));
  EXPECT_EQ(r.text, "AB");
  ASSERT_EQ(r.tokens.size(), 2u);
  EXPECT_EQ(r.tokens[0].start_frame, 1);
  EXPECT_EQ(r.tokens[1].start_frame, 3);
  ASSERT_EQ(r.words.size(), 1u);
  EXPECT_DOUBLE_EQ(r.words[0].start_s, 0.04);
  EXPECT_NEAR(r.words[0].confidence, (0.9 + 0.8) / 2, 1e-5);
  EXPECT_EQ(s.trailing_blank_frames(), 1);
  EXPECT_EQ(s.utterance_frames(), 5);
}

TEST(TransducerSearch, GreedyMaxSymbolsPerFrameAndUnkIsBlank) {
  TableNetworks nets;
  nets.table[{1, 0}] = {0.1, 0, 0.9, 0, 0};
  nets.table[{1, 2}] = {0.1, 0, 0, 0.9, 0};  // a second unit on the same frame
  nets.table[{1, 3}] = {0.1, 0.9, 0, 0, 0};  // then <unk>: no unit, the frame ends
  const std::vector<float> frames = {1};
  const int valid[] = {1};
  for (int max_symbols : {1, 2, 3}) {
    auto s = make(TransducerSearchKind::kGreedy, max_symbols);
    TransducerStreamSearch* streams[] = {&s};
    ASSERT_TRUE(transducer_search_chunk(nets, streams, frames.data(), 1, valid).is_ok());
    const std::vector<int> expected =
        max_symbols == 1 ? std::vector<int>{2} : std::vector<int>{2, 3};
    EXPECT_EQ(ids(s.partial()), expected) << max_symbols;
  }
}

TEST(TransducerSearch, BatchedStreamsAreIndependentAndShareCalls) {
  TableNetworks nets;
  nets.table[{1, 0}] = {0.1, 0, 0.9, 0, 0};
  nets.table[{2, 0}] = {0.1, 0, 0, 0, 0.9};
  nets.table[{2, 2}] = {0.2, 0, 0, 0.8, 0};
  const std::vector<float> a = {1, 2, 0}, b = {2, 0, 0};
  std::vector<std::vector<int>> alone;
  for (const auto* frames : {&a, &b}) {
    auto s = make(TransducerSearchKind::kGreedy);
    TransducerStreamSearch* streams[] = {&s};
    const int valid[] = {3};
    ASSERT_TRUE(transducer_search_chunk(nets, streams, frames->data(), 3, valid).is_ok());
    alone.push_back(ids(s.partial()));
  }
  // Together (b's last frame is padding: 2 valid frames), one joiner call per frame.
  auto sa = make(TransducerSearchKind::kGreedy), sb = make(TransducerSearchKind::kGreedy);
  TransducerStreamSearch* streams[] = {&sa, &sb};
  std::vector<float> both = a;
  both.insert(both.end(), b.begin(), b.end());
  const int valid[] = {3, 2};
  nets.joiner_calls = 0;
  ASSERT_TRUE(transducer_search_chunk(nets, streams, both.data(), 3, valid).is_ok());
  EXPECT_EQ(ids(sa.partial()), alone[0]);
  EXPECT_EQ(ids(sb.partial()), alone[1]);
  EXPECT_EQ(nets.joiner_calls, 3);
  EXPECT_EQ(sb.frames_seen(), 2);
}

TEST(TransducerSearch, ModifiedBeamFindsWhatGreedyMissesAndMergesEqualSequences) {
  TableNetworks nets;
  // Frame 1: blank 0.6 beats "▁A" 0.4; frame 2 after "▁A": "B" is near certain, after blank it
  // stays blank. Greedy: nothing. Beam: "▁A B" has 0.4 * 1.0 = 0.4 > blank path 0.6 * 0.5.
  nets.table[{1, 0}] = {0.6, 0, 0.4, 0, 0};
  nets.table[{2, 0}] = {0.5, 0, 0, 0, 0.5};
  nets.table[{2, 2}] = {0.0, 0, 0, 1.0, 0};
  const std::vector<float> frames = {1, 2};
  const int valid[] = {2};
  auto greedy = make(TransducerSearchKind::kGreedy);
  TransducerStreamSearch* g[] = {&greedy};
  ASSERT_TRUE(transducer_search_chunk(nets, g, frames.data(), 2, valid).is_ok());
  EXPECT_TRUE(greedy.partial().tokens.empty());
  auto beam = make(TransducerSearchKind::kModifiedBeam, 1, 4);
  TransducerStreamSearch* b[] = {&beam};
  ASSERT_TRUE(transducer_search_chunk(nets, b, frames.data(), 2, valid).is_ok());
  EXPECT_EQ(ids(beam.finalize()), (std::vector<int>{2, 3}));
  // Merging: "▁C" reached two ways in two frames (blank then C, C then blank) is one hypothesis
  // whose probability is the sum.
  TableNetworks merge;
  merge.table[{1, 0}] = {0.5, 0, 0, 0, 0.5};
  merge.table[{1, 4}] = {1.0, 0, 0, 0, 0};
  auto m = make(TransducerSearchKind::kModifiedBeam, 1, 4);
  TransducerStreamSearch* ms[] = {&m};
  const std::vector<float> two = {1, 1};
  ASSERT_TRUE(transducer_search_chunk(merge, ms, two.data(), 2, valid).is_ok());
  const DecodingResult r = m.finalize();
  EXPECT_EQ(ids(r), (std::vector<int>{4}));
  EXPECT_NEAR(r.score, std::log(0.5 + 0.5 * 0.5), 1e-5);
}

TEST(TransducerSearch, HotwordsChangeTheChoiceInBothSearches) {
  TableNetworks nets;
  // "▁C" below blank on frame 1; a hotword "c" with bonus 1 lifts it. (Beam 2: modified beam
  // search picks extensions by acoustic score and adds the bonus to the chosen ones, so the
  // boosted unit must be among them.)
  nets.table[{1, 0}] = {0.7, 0, 0, 0, 0.3};
  auto graph = ContextGraph::from_phrases(*pieces(), {"c"}, 1.0f);
  ASSERT_TRUE(graph.has_value()) << graph.status().to_string();
  auto hotwords = std::make_shared<const ContextGraph>(std::move(*graph));
  for (auto kind : {TransducerSearchKind::kGreedy, TransducerSearchKind::kModifiedBeam}) {
    auto plain = make(kind, 1, 2);
    auto boosted = make(kind, 1, 2, hotwords);
    TransducerStreamSearch* both[] = {&plain, &boosted};
    const std::vector<float> two = {1, 0, 1, 0};
    const int valid2[] = {2, 2};
    ASSERT_TRUE(transducer_search_chunk(nets, both, two.data(), 2, valid2).is_ok());
    EXPECT_TRUE(plain.finalize().tokens.empty()) << static_cast<int>(kind);
    EXPECT_EQ(ids(boosted.finalize()), (std::vector<int>{4})) << static_cast<int>(kind);
  }
}

TEST(TransducerSearch, ResetsKeepOrDropTheDecoderContext) {
  TableNetworks nets;
  nets.table[{1, 0}] = {0.1, 0, 0.9, 0, 0};  // after blank: "▁A"
  nets.table[{1, 2}] = {0.1, 0, 0, 0.9, 0};  // after "▁A": "B"
  const std::vector<float> frames = {1};
  const int valid[] = {1};
  auto s = make(TransducerSearchKind::kGreedy);
  TransducerStreamSearch* streams[] = {&s};
  ASSERT_TRUE(transducer_search_chunk(nets, streams, frames.data(), 1, valid).is_ok());
  s.reset_utterance();  // the context keeps "▁A": the next frame emits "B"
  ASSERT_TRUE(transducer_search_chunk(nets, streams, frames.data(), 1, valid).is_ok());
  EXPECT_EQ(ids(s.partial()), (std::vector<int>{3}));
  EXPECT_EQ(s.partial().tokens[0].start_frame, 1);  // frames keep counting
  s.reset_utterance();
  s.reset_state();  // a fresh stream's context: "▁A" again
  ASSERT_TRUE(transducer_search_chunk(nets, streams, frames.data(), 1, valid).is_ok());
  EXPECT_EQ(ids(s.partial()), (std::vector<int>{2}));
  s.accept_skipped_frames(3);
  EXPECT_EQ(s.trailing_blank_frames(), 3);
}

TEST(TransducerSearch, BadConfigsAndMismatchedBatchesAreErrors) {
  TransducerSearchConfig config;
  config.max_symbols_per_frame = -1;
  EXPECT_FALSE(config.validate().is_ok());
  config.max_symbols_per_frame = 17;
  EXPECT_FALSE(config.validate().is_ok());
  config.max_symbols_per_frame = 0;  // the model's default
  EXPECT_TRUE(config.validate().is_ok());
  config.max_symbols_per_frame = 1;
  config.beam_width = 0;
  EXPECT_FALSE(config.validate().is_ok());
  TableNetworks nets;
  auto g = make(TransducerSearchKind::kGreedy);
  auto b = make(TransducerSearchKind::kModifiedBeam);
  TransducerStreamSearch* mixed[] = {&g, &b};
  const std::vector<float> frames = {0, 0};
  const int valid[] = {1, 1};
  EXPECT_FALSE(transducer_search_chunk(nets, mixed, frames.data(), 1, valid).is_ok());
  const int one[] = {1};
  EXPECT_FALSE(transducer_search_chunk(nets, mixed, frames.data(), 1, one).is_ok());
}

TEST(Vocabulary, PiecesJoinWordsAndEncodeHotwordsInEitherCase) {
  auto v = pieces();
  EXPECT_EQ(v->unit(), UnitType::kPieces);
  const std::vector<int> units = {2, 3, 4};
  EXPECT_EQ(v->detokenize(units), "AB C");
  const auto words = v->split_words(units);
  ASSERT_EQ(words.size(), 2u);
  EXPECT_EQ(words[0].text, "AB");
  EXPECT_EQ(words[1].first_token, 2);
  auto encoded = v->encode("ab c");
  ASSERT_TRUE(encoded.has_value()) << encoded.status().to_string();
  EXPECT_EQ(*encoded, (std::vector<int>{2, 3, 4}));
  EXPECT_FALSE(v->encode("x").has_value());
}

}  // namespace
}  // namespace voxrt::decode
