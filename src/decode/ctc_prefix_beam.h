// CTC prefix beam search, streaming: frames arrive chunk by chunk and the best prefix is
// available at any time. Optional word n-gram LM (scored when a word completes: at the word
// boundary unit for characters, at a piece starting with U+2581 for SentencePiece, and at the
// end of the utterance with </s>) and optional per-stream hotword boosting.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/arpa_lm.h"
#include "decode/context_graph.h"
#include "decode/decoding_result.h"
#include "decode/lexicon.h"
#include "decode/log_probs.h"

namespace voxrt::decode {

struct BeamSearchConfig {
  int beam_width = 8;
  // Per frame, at most this many non-blank units are expanded (the most likely ones)...
  int max_units_per_frame = 8;
  // ...and none whose log-posterior is below this.
  float unit_prune_log_prob = -10.0f;
  // Frames whose blank log-posterior is at least this only extend blanks (0 disables: a log
  // posterior never exceeds 0). log(0.999) ~ -0.001 skips confident blank frames.
  float blank_skip_log_prob = 1.0f;
  // Weight of the LM's natural-log probability, and a bonus per word the LM scores.
  float lm_weight = 0.5f;
  float word_insertion_bonus = 0.0f;

  Status validate() const;
  std::string to_string() const;
};

class CtcPrefixBeamDecoder {
 public:
  // `lm`, `hotwords` and `lexicon` may be null; all are shared and immutable. With a lexicon,
  // only its words may be spelled: a prefix whose current word is no word's beginning is pruned,
  // and a word must be complete when it ends.
  static Expected<CtcPrefixBeamDecoder> create(
      std::shared_ptr<const Vocabulary> vocabulary, const BeamSearchConfig& config,
      TimeBase time_base, std::shared_ptr<const ArpaLm> lm = nullptr,
      std::shared_ptr<const ContextGraph> hotwords = nullptr,
      std::shared_ptr<const Lexicon> lexicon = nullptr);

  Status accept(LogProbView chunk);
  // The best hypothesis so far, without end-of-utterance scoring.
  DecodingResult partial() const;
  // Scores the last word and </s>, takes back unfinished hotword bonuses, re-ranks and returns
  // the best hypothesis. Call reset_utterance() before feeding the next utterance.
  DecodingResult finalize();
  void reset_utterance();

  long long utterance_frames() const { return frames_seen_ - utterance_start_frame_; }
  // Frames since the best hypothesis last emitted a unit.
  long long trailing_blank_frames() const;
  bool has_tokens() const;
  long long frames_seen() const { return frames_seen_; }
  std::size_t hypothesis_count() const { return hypotheses_.size(); }

 private:
  struct Hypothesis {
    std::vector<int> prefix;
    std::vector<TokenSpan> spans;
    std::uint64_t hash = 0;
    float log_blank = -std::numeric_limits<float>::infinity();
    float log_nonblank = -std::numeric_limits<float>::infinity();
    // Scores that depend only on the prefix.
    float lm_log_prob = 0.0f;
    int lm_words = 0;
    ArpaLm::State lm_state;
    int word_start = 0;  // index in prefix where the unscored word begins
    float hotword_score = 0.0f;
    int hotword_state = ContextGraph::kRoot;
    // The word being spelled (kept with a lexicon only).
    std::string word_text;
    // Best single contribution this frame, which decides whose spans the prefix keeps.
    float best_contribution = -std::numeric_limits<float>::infinity();

    float acoustic() const;
  };

  CtcPrefixBeamDecoder(std::shared_ptr<const Vocabulary> vocabulary, const BeamSearchConfig& config,
                       TimeBase time_base, std::shared_ptr<const ArpaLm> lm,
                       std::shared_ptr<const ContextGraph> hotwords,
                       std::shared_ptr<const Lexicon> lexicon);
  // With a lexicon: the parent's word text extended by `unit`, or false when no word can come of
  // it (a finished word that is not in the lexicon, a beginning of none).
  bool lexicon_allows(const Hypothesis& parent, int unit, std::string& word_text) const;
  float total_score(const Hypothesis& hypothesis) const;
  // Scores the word prefix[word_start, end) with the LM, updating the hypothesis.
  void score_word(Hypothesis& hypothesis, std::size_t end) const;
  Hypothesis& find_or_add(std::uint64_t hash, const std::vector<int>& prefix, bool& created);
  void extend(const Hypothesis& parent, int unit, float contribution, float log_prob,
              long long frame);
  void advance_frame(const float* row, long long frame);
  const Hypothesis* best() const;

  std::shared_ptr<const Vocabulary> vocabulary_;
  BeamSearchConfig config_;
  TimeBase time_base_;
  std::shared_ptr<const ArpaLm> lm_;
  std::shared_ptr<const ContextGraph> hotwords_;
  std::shared_ptr<const Lexicon> lexicon_;
  std::vector<Hypothesis> hypotheses_;
  std::vector<Hypothesis> next_;
  std::unordered_map<std::uint64_t, int> next_index_;
  std::vector<std::pair<float, int>> candidates_;
  long long frames_seen_ = 0;
  long long utterance_start_frame_ = 0;
};

}  // namespace voxrt::decode
