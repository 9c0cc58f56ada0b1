#include "decode/ctc_prefix_beam.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace voxrt::decode {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
constexpr std::uint64_t kEmptyPrefixHash = 0x9E3779B97F4A7C15ull;

float log_add(float a, float b) {
  if (a == kNegInf) return b;
  if (b == kNegInf) return a;
  const float high = std::max(a, b);
  return high + std::log1p(std::exp(std::min(a, b) - high));
}

std::uint64_t extend_hash(std::uint64_t hash, int unit) {
  std::uint64_t z = hash * 0x100000001B3ull + static_cast<std::uint64_t>(unit) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

Status BeamSearchConfig::validate() const {
  if (beam_width < 1 || beam_width > 1024) {
    return invalid_argument("beam search ", to_string(), ": expected beam_width in [1, 1024]");
  }
  if (max_units_per_frame < 1) {
    return invalid_argument("beam search ", to_string(), ": expected max_units_per_frame >= 1");
  }
  if (!std::isfinite(lm_weight) || !std::isfinite(word_insertion_bonus) ||
      std::isnan(unit_prune_log_prob) || std::isnan(blank_skip_log_prob)) {
    return invalid_argument("beam search ", to_string(), ": expected finite weights");
  }
  return Status::ok();
}

std::string BeamSearchConfig::to_string() const {
  std::ostringstream out;
  out << "{beam_width=" << beam_width << " max_units_per_frame=" << max_units_per_frame
      << " unit_prune_log_prob=" << unit_prune_log_prob
      << " blank_skip_log_prob=" << blank_skip_log_prob << " lm_weight=" << lm_weight
      << " word_insertion_bonus=" << word_insertion_bonus << "}";
  return out.str();
}

float CtcPrefixBeamDecoder::Hypothesis::acoustic() const {
  return log_add(log_blank, log_nonblank);
}

Expected<CtcPrefixBeamDecoder> CtcPrefixBeamDecoder::create(
    std::shared_ptr<const Vocabulary> vocabulary, const BeamSearchConfig& config,
    TimeBase time_base, std::shared_ptr<const ArpaLm> lm,
    std::shared_ptr<const ContextGraph> hotwords, std::shared_ptr<const Lexicon> lexicon) {
  if (vocabulary == nullptr) return invalid_argument("beam search: no vocabulary");
  VOXRT_RETURN_IF_ERROR(config.validate());
  if (lexicon != nullptr && lexicon->size() == 0)
    return invalid_argument("beam search: the lexicon has no words");
  return CtcPrefixBeamDecoder(std::move(vocabulary), config, time_base, std::move(lm),
                              std::move(hotwords), std::move(lexicon));
}

CtcPrefixBeamDecoder::CtcPrefixBeamDecoder(std::shared_ptr<const Vocabulary> vocabulary,
                                           const BeamSearchConfig& config, TimeBase time_base,
                                           std::shared_ptr<const ArpaLm> lm,
                                           std::shared_ptr<const ContextGraph> hotwords,
                                           std::shared_ptr<const Lexicon> lexicon)
    : vocabulary_(std::move(vocabulary)),
      config_(config),
      time_base_(time_base),
      lm_(std::move(lm)),
      hotwords_(std::move(hotwords)),
      lexicon_(std::move(lexicon)) {
  reset_utterance();
}

bool CtcPrefixBeamDecoder::lexicon_allows(const Hypothesis& parent, int unit,
                                          std::string& word_text) const {
  const bool boundary = vocabulary_->is_word_boundary(unit);
  const bool new_word = boundary || (vocabulary_->unit() == UnitType::kSentencePiece &&
                                     vocabulary_->starts_word(unit));
  if (new_word && !parent.word_text.empty() && !lexicon_->contains(parent.word_text)) return false;
  if (boundary) {
    word_text.clear();
    return true;
  }
  std::string_view text = vocabulary_->token(unit);
  if (new_word && text.starts_with(kWordMarker)) text.remove_prefix(kWordMarker.size());
  word_text = new_word ? std::string(text) : parent.word_text + std::string(text);
  return word_text.empty() || lexicon_->has_prefix(word_text);
}

void CtcPrefixBeamDecoder::reset_utterance() {
  hypotheses_.clear();
  Hypothesis empty;
  empty.hash = kEmptyPrefixHash;
  empty.log_blank = 0.0f;
  if (lm_ != nullptr) empty.lm_state = lm_->sentence_start();
  hypotheses_.push_back(std::move(empty));
  utterance_start_frame_ = frames_seen_;
}

float CtcPrefixBeamDecoder::total_score(const Hypothesis& hypothesis) const {
  return hypothesis.acoustic() + config_.lm_weight * hypothesis.lm_log_prob +
         config_.word_insertion_bonus * static_cast<float>(hypothesis.lm_words) +
         hypothesis.hotword_score;
}

void CtcPrefixBeamDecoder::score_word(Hypothesis& hypothesis, std::size_t end) const {
  std::string word;
  for (std::size_t i = static_cast<std::size_t>(hypothesis.word_start); i < end; ++i) {
    const int unit = hypothesis.prefix[i];
    if (vocabulary_->is_word_boundary(unit)) continue;
    std::string_view text = vocabulary_->token(unit);
    if (i == static_cast<std::size_t>(hypothesis.word_start) && text.starts_with(kWordMarker)) {
      text.remove_prefix(kWordMarker.size());
    }
    word += text;
  }
  if (word.empty()) return;
  ++hypothesis.lm_words;
  if (lm_ == nullptr) return;
  ArpaLm::State next;
  hypothesis.lm_log_prob += lm_->score(hypothesis.lm_state, word, next);
  hypothesis.lm_state = std::move(next);
}

CtcPrefixBeamDecoder::Hypothesis& CtcPrefixBeamDecoder::find_or_add(std::uint64_t hash,
                                                                    const std::vector<int>& prefix,
                                                                    bool& created) {
  // Open addressing on the 64-bit prefix hash; a collision (different prefix) probes onward.
  for (std::uint64_t key = hash;; ++key) {
    auto it = next_index_.find(key);
    if (it == next_index_.end()) {
      next_index_.emplace(key, static_cast<int>(next_.size()));
      next_.emplace_back();
      next_.back().hash = hash;
      created = true;
      return next_.back();
    }
    Hypothesis& existing = next_[static_cast<std::size_t>(it->second)];
    if (existing.prefix == prefix) {
      created = false;
      return existing;
    }
  }
}

// Copies what depends only on the prefix.
static void copy_prefix_scores(const auto& from, auto& to) {
  to.prefix = from.prefix;
  to.lm_log_prob = from.lm_log_prob;
  to.lm_words = from.lm_words;
  to.lm_state = from.lm_state;
  to.word_start = from.word_start;
  to.hotword_score = from.hotword_score;
  to.hotword_state = from.hotword_state;
  to.word_text = from.word_text;
}

void CtcPrefixBeamDecoder::extend(const Hypothesis& parent, int unit, float contribution,
                                  float log_prob, long long frame) {
  std::string word_text;
  if (lexicon_ != nullptr && !lexicon_allows(parent, unit, word_text)) return;
  std::vector<int> prefix = parent.prefix;
  prefix.push_back(unit);
  bool created = false;
  Hypothesis& child = find_or_add(extend_hash(parent.hash, unit), prefix, created);
  if (created) {
    copy_prefix_scores(parent, child);
    child.prefix = std::move(prefix);
    child.word_text = std::move(word_text);
    const std::size_t position = child.prefix.size() - 1;
    if (vocabulary_->is_word_boundary(unit)) {
      score_word(child, position);
      child.word_start = static_cast<int>(position) + 1;
    } else if (vocabulary_->unit() == UnitType::kSentencePiece && vocabulary_->starts_word(unit)) {
      score_word(child, position);
      child.word_start = static_cast<int>(position);
    }
    if (hotwords_ != nullptr) {
      child.hotword_score += hotwords_->forward(parent.hotword_state, unit, child.hotword_state);
    }
  }
  child.log_nonblank = log_add(child.log_nonblank, contribution);
  if (contribution > child.best_contribution) {
    child.best_contribution = contribution;
    child.spans = parent.spans;
    child.spans.push_back({unit, frame, frame, log_prob});
  }
}

void CtcPrefixBeamDecoder::advance_frame(const float* row, long long frame) {
  const int blank = vocabulary_->blank_id();
  const float blank_log_prob = row[blank];
  if (blank_log_prob >= config_.blank_skip_log_prob) {
    for (Hypothesis& hypothesis : hypotheses_) {
      hypothesis.log_blank = hypothesis.acoustic() + blank_log_prob;
      hypothesis.log_nonblank = kNegInf;
    }
    return;
  }
  candidates_.clear();
  for (int unit = 0; unit < vocabulary_->size(); ++unit) {
    if (unit != blank && row[unit] >= config_.unit_prune_log_prob) {
      candidates_.emplace_back(row[unit], unit);
    }
  }
  if (static_cast<int>(candidates_.size()) > config_.max_units_per_frame) {
    std::partial_sort(candidates_.begin(), candidates_.begin() + config_.max_units_per_frame,
                      candidates_.end(), std::greater<>());
    candidates_.resize(static_cast<std::size_t>(config_.max_units_per_frame));
  }
  next_.clear();
  next_.reserve(hypotheses_.size() * (candidates_.size() + 1));
  next_index_.clear();
  for (const Hypothesis& hypothesis : hypotheses_) {
    auto same_prefix = [&]() -> Hypothesis& {
      bool created = false;
      Hypothesis& same = find_or_add(hypothesis.hash, hypothesis.prefix, created);
      if (created) copy_prefix_scores(hypothesis, same);
      return same;
    };
    {
      Hypothesis& same = same_prefix();
      const float contribution = hypothesis.acoustic() + blank_log_prob;
      same.log_blank = log_add(same.log_blank, contribution);
      if (contribution > same.best_contribution) {
        same.best_contribution = contribution;
        same.spans = hypothesis.spans;
      }
    }
    for (const auto& [log_prob, unit] : candidates_) {
      if (!hypothesis.prefix.empty() && unit == hypothesis.prefix.back()) {
        // The same unit again without a blank between merges into it...
        Hypothesis& same = same_prefix();
        const float contribution = hypothesis.log_nonblank + log_prob;
        same.log_nonblank = log_add(same.log_nonblank, contribution);
        if (contribution > same.best_contribution) {
          same.best_contribution = contribution;
          same.spans = hypothesis.spans;
          same.spans.back().end_frame = frame;
          same.spans.back().peak_log_posterior =
              std::max(same.spans.back().peak_log_posterior, log_prob);
        }
        // ...and after a blank it is a new unit.
        if (hypothesis.log_blank != kNegInf) {
          extend(hypothesis, unit, hypothesis.log_blank + log_prob, log_prob, frame);
        }
      } else {
        extend(hypothesis, unit, hypothesis.acoustic() + log_prob, log_prob, frame);
      }
    }
  }
  const std::size_t keep = std::min(next_.size(), static_cast<std::size_t>(config_.beam_width));
  std::partial_sort(
      next_.begin(), next_.begin() + static_cast<std::ptrdiff_t>(keep), next_.end(),
      [this](const Hypothesis& a, const Hypothesis& b) { return total_score(a) > total_score(b); });
  next_.resize(keep);
  for (Hypothesis& hypothesis : next_) hypothesis.best_contribution = kNegInf;
  hypotheses_.swap(next_);
}

Status CtcPrefixBeamDecoder::accept(LogProbView chunk) {
  if (chunk.vocab_size != vocabulary_->size()) {
    return invalid_argument("beam search: expected log-probs over ", vocabulary_->size(),
                            " units, found ", chunk.vocab_size);
  }
  if (chunk.frames < 0 || (chunk.frames > 0 && chunk.data == nullptr)) {
    return invalid_argument("beam search: expected a chunk of frames, found ", chunk.frames);
  }
  for (int t = 0; t < chunk.frames; ++t) {
    const float* row = chunk.frame(t);
    for (int v = 0; v < chunk.vocab_size; ++v) {
      if (std::isnan(row[v])) {
        return invalid_argument("beam search: NaN log-prob at frame ", frames_seen_, " unit ", v);
      }
    }
    advance_frame(row, frames_seen_++);
  }
  return Status::ok();
}

const CtcPrefixBeamDecoder::Hypothesis* CtcPrefixBeamDecoder::best() const {
  const Hypothesis* best_hypothesis = nullptr;
  for (const Hypothesis& hypothesis : hypotheses_) {
    if (best_hypothesis == nullptr || total_score(hypothesis) > total_score(*best_hypothesis)) {
      best_hypothesis = &hypothesis;
    }
  }
  return best_hypothesis;
}

DecodingResult CtcPrefixBeamDecoder::partial() const {
  const Hypothesis* hypothesis = best();
  return make_result(*vocabulary_, hypothesis->spans, time_base_, total_score(*hypothesis), false);
}

DecodingResult CtcPrefixBeamDecoder::finalize() {
  const Hypothesis* winner = nullptr;
  Hypothesis finished_winner;
  float winner_score = kNegInf;
  // With a lexicon, a hypothesis whose last word is unfinished loses to any other (and wins only
  // when every hypothesis is unfinished).
  auto unfinished = [this](const Hypothesis& hypothesis) {
    return lexicon_ != nullptr && !hypothesis.word_text.empty() &&
           !lexicon_->contains(hypothesis.word_text);
  };
  const bool any_finished = std::any_of(hypotheses_.begin(), hypotheses_.end(),
                                        [&](const Hypothesis& h) { return !unfinished(h); });
  for (const Hypothesis& hypothesis : hypotheses_) {
    if (any_finished && unfinished(hypothesis)) continue;
    Hypothesis finished = hypothesis;
    score_word(finished, finished.prefix.size());
    // The end of a sentence is scored only where there is one. An empty hypothesis is a segment
    // without speech (the VAD opened on a noise), not an empty sentence: P(</s> | <s>) is tiny in
    // an LM of sentences, so charging it made any word plus the word bonus beat silence, and
    // continuous streams got a lone low-confidence "a" per spurious segment.
    if (lm_ != nullptr && finished.lm_words > 0) {
      finished.lm_log_prob += lm_->sentence_end_score(finished.lm_state);
    }
    if (hotwords_ != nullptr) finished.hotword_score += hotwords_->finalize(finished.hotword_state);
    const float score = total_score(finished);
    if (winner == nullptr || score > winner_score) {
      winner = &hypothesis;
      winner_score = score;
      finished_winner = std::move(finished);
    }
  }
  return make_result(*vocabulary_, finished_winner.spans, time_base_, winner_score, true);
}

long long CtcPrefixBeamDecoder::trailing_blank_frames() const {
  const Hypothesis* hypothesis = best();
  if (hypothesis->spans.empty()) return utterance_frames();
  return frames_seen_ - 1 - hypothesis->spans.back().end_frame;
}

bool CtcPrefixBeamDecoder::has_tokens() const {
  return !best()->prefix.empty();
}

}  // namespace voxrt::decode
