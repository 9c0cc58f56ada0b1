#include "stream/encoder_decoder/beam_search.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace voxrt::stream {

WindowBeamSearch::WindowBeamSearch(std::shared_ptr<const WindowRules> rules,
                                   std::vector<int> prompt, int beam_width)
    : rules_(std::move(rules)), prompt_(std::move(prompt)), beam_width_(beam_width) {
  beams_.push_back(Hypothesis{});
}

void WindowBeamSearch::observe_first_position(const float* logits) {
  const int no_speech = rules_->contract.no_speech_id;
  if (no_speech < 0) return;
  no_speech_probability_ = std::exp(static_cast<double>(logits[no_speech]) -
                                    log_sum_exp(logits, rules_->contract.vocab_size));
}

int WindowBeamSearch::next_token(int row) const {
  const Hypothesis& beam = beams_[static_cast<std::size_t>(row)];
  return beam.tokens.empty() ? prompt_.back() : beam.tokens.back();
}

void WindowBeamSearch::advance(float* logits, std::vector<int>& sources) {
  sources.clear();
  const int vocab = rules_->contract.vocab_size;
  const int eos = rules_->contract.eos_id;
  struct Candidate {
    double score;
    int row;
    int token;
  };
  std::vector<Candidate> candidates;
  std::vector<int> ids(static_cast<std::size_t>(vocab));
  const auto offered = static_cast<std::size_t>(beam_width_ + 1);
  for (std::size_t row = 0; row < beams_.size(); ++row) {
    float* l = logits + row * static_cast<std::size_t>(vocab);
    rules_->filter(beams_[row].tokens, l);
    const double normaliser = log_sum_exp(l, vocab);
    std::iota(ids.begin(), ids.end(), 0);
    const std::size_t top = std::min(offered, ids.size());
    // The most likely first; ties: the lower id.
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(top), ids.end(),
                      [&](int a, int b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    for (std::size_t k = 0; k < top; ++k) {
      const int id = ids[k];
      if (!std::isfinite(l[id])) break;
      candidates.push_back(
          {beams_[row].sum_log_probability + (l[id] - normaliser), static_cast<int>(row), id});
    }
  }
  // Best first; ties keep the order offered (row, then likelihood), as a stable sort does.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
  std::vector<Hypothesis> next;
  std::vector<Hypothesis> newly_finished;
  for (const Candidate& c : candidates) {
    Hypothesis h{beams_[static_cast<std::size_t>(c.row)].tokens, c.score, false};
    if (c.token == eos) {
      h.ended = true;
      newly_finished.push_back(std::move(h));
      continue;
    }
    h.tokens.push_back(c.token);
    next.push_back(std::move(h));
    sources.push_back(c.row);
    if (static_cast<int>(next.size()) == beam_width_) break;
  }
  for (Hypothesis& h : newly_finished) {
    if (static_cast<int>(finished_.size()) >= beam_width_) break;
    finished_.push_back(std::move(h));
  }
  beams_ = std::move(next);
  const bool full = static_cast<int>(finished_.size()) >= beam_width_;
  // All beams have said one token per step: the same count.
  const bool at_limit =
      !beams_.empty() && static_cast<int>(prompt_.size() + beams_[0].tokens.size()) >=
                             rules_->contract.max_target_positions;
  if (at_limit && !full) {
    std::vector<std::size_t> order(beams_.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return beams_[a].sum_log_probability > beams_[b].sum_log_probability;
    });
    for (std::size_t i : order) {
      if (static_cast<int>(finished_.size()) >= beam_width_) break;
      finished_.push_back(beams_[i]);
    }
  }
  if (full || at_limit) {
    beams_.clear();
    sources.clear();
  }
}

WindowOutcome WindowBeamSearch::outcome() const {
  WindowOutcome out;
  out.no_speech_probability = no_speech_probability_;
  const Hypothesis* best = nullptr;
  double best_score = 0.0;
  for (const Hypothesis& h : finished_) {
    // OpenAI's ranking without a length penalty: the mean log-probability per token.
    const double score =
        h.sum_log_probability / static_cast<double>(std::max<std::size_t>(1, h.tokens.size()));
    if (best == nullptr || score > best_score) {
      best = &h;
      best_score = score;
    }
  }
  if (best == nullptr) return out;
  const std::size_t said = best->tokens.size() + (best->ended ? 1 : 0);
  out.mean_log_probability =
      said == 0 ? 0.0 : best->sum_log_probability / static_cast<double>(said);
  out.tokens.assign(
      best->tokens.begin(),
      best->tokens.begin() + static_cast<std::ptrdiff_t>(length_without_repeats(best->tokens)));
  out.silence = is_silence(rules_->contract, out.no_speech_probability, out.mean_log_probability);
  return out;
}

}  // namespace voxrt::stream
