#include "stream/encoder_decoder/window_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace voxrt::stream {
namespace {

// log(sum(exp(logits))) over the ids whose logit is finite.
double log_sum_exp(const float* logits, int count) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < count; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0.0;
  for (int i = 0; i < count; ++i) {
    if (std::isfinite(logits[i])) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  }
  return max_logit + std::log(sum);
}

}  // namespace

WindowRules WindowRules::create(const EncoderDecoderContract& contract,
                                const std::vector<std::uint8_t>& special) {
  WindowRules rules;
  rules.contract = contract;
  const auto vocab = static_cast<std::size_t>(contract.vocab_size);
  rules.suppressed.assign(vocab, 0);
  for (std::size_t id = 0; id < std::min(vocab, special.size()); ++id)
    rules.suppressed[id] = special[id];
  for (int id : contract.suppress_tokens) rules.suppressed[static_cast<std::size_t>(id)] = 1;
  rules.suppressed[static_cast<std::size_t>(contract.eos_id)] = 0;
  rules.begin_suppressed = rules.suppressed;
  for (int id : contract.begin_suppress_tokens)
    rules.begin_suppressed[static_cast<std::size_t>(id)] = 1;
  return rules;
}

WindowSearch::WindowSearch(std::shared_ptr<const WindowRules> rules) : rules_(std::move(rules)) {}

void WindowSearch::observe_first_position(const float* logits) {
  const int no_speech = rules_->contract.no_speech_id;
  if (no_speech < 0) return;
  no_speech_probability_ = std::exp(static_cast<double>(logits[no_speech]) -
                                    log_sum_exp(logits, rules_->contract.vocab_size));
}

bool WindowSearch::accept_logits(float* logits) {
  if (done_) return false;
  const int vocab = rules_->contract.vocab_size;
  const std::vector<std::uint8_t>& mask =
      tokens_.empty() ? rules_->begin_suppressed : rules_->suppressed;
  constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
  for (int id = 0; id < vocab; ++id) {
    if (mask[static_cast<std::size_t>(id)]) logits[id] = kMinusInfinity;
  }
  // The first highest logit (ties: the lowest id, as torch.argmax).
  const int chosen = static_cast<int>(std::max_element(logits, logits + vocab) - logits);
  sum_log_probability_ += static_cast<double>(logits[chosen]) - log_sum_exp(logits, vocab);
  ++choices_;
  if (chosen == rules_->contract.eos_id) {
    done_ = true;
    return false;
  }
  tokens_.push_back(chosen);
  int ngram = 0;
  if (repeats_at_end(ngram)) {
    tokens_.resize(tokens_.size() - static_cast<std::size_t>((kRepeatCopies - 1) * ngram));
    done_ = true;
    return false;
  }
  if (past_length() + 1 >= rules_->contract.max_target_positions) {
    done_ = true;
    return false;
  }
  return true;
}

bool WindowSearch::repeats_at_end(int& ngram) const {
  const int size = static_cast<int>(tokens_.size());
  for (int n = 1; n <= kMaxRepeatTokens && n * kRepeatCopies <= size; ++n) {
    bool repeated = true;
    for (int i = size - n * (kRepeatCopies - 1); i < size && repeated; ++i)
      repeated = tokens_[static_cast<std::size_t>(i)] == tokens_[static_cast<std::size_t>(i - n)];
    if (repeated) {
      ngram = n;
      return true;
    }
  }
  return false;
}

int WindowSearch::last_token() const {
  return tokens_.empty() ? rules_->contract.prompt.back() : tokens_.back();
}

int WindowSearch::past_length() const {
  return static_cast<int>(rules_->contract.prompt.size() + tokens_.size()) - 1;
}

double WindowSearch::mean_log_probability() const {
  return choices_ == 0 ? 0.0 : sum_log_probability_ / choices_;
}

bool WindowSearch::is_silence() const {
  const EncoderDecoderContract& c = rules_->contract;
  return c.no_speech_id >= 0 && no_speech_probability_ > c.no_speech_threshold &&
         mean_log_probability() < c.logprob_threshold;
}

}  // namespace voxrt::stream
