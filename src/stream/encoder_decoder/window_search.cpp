#include "stream/encoder_decoder/window_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "stream/encoder_decoder/token_sampling.h"

namespace voxrt::stream {
namespace {

// The n (1..kMaxRepeatTokens) of the n-gram said kRepeatCopies times at the end of `tokens`;
// 0: none.
int repeated_ngram_at_end(std::span<const int> tokens) {
  const int size = static_cast<int>(tokens.size());
  for (int n = 1; n <= kMaxRepeatTokens && n * kRepeatCopies <= size; ++n) {
    bool repeated = true;
    for (int i = size - n * (kRepeatCopies - 1); i < size && repeated; ++i)
      repeated = tokens[static_cast<std::size_t>(i)] == tokens[static_cast<std::size_t>(i - n)];
    if (repeated) return n;
  }
  return 0;
}

}  // namespace

double log_sum_exp(const float* logits, int count) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < count; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0.0;
  for (int i = 0; i < count; ++i) {
    if (std::isfinite(logits[i])) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  }
  return max_logit + std::log(sum);
}

bool is_silence(const EncoderDecoderContract& c, double no_speech_probability,
                double mean_log_probability) {
  return c.no_speech_id >= 0 && no_speech_probability > c.no_speech_threshold &&
         mean_log_probability < c.logprob_threshold;
}

std::size_t length_without_repeats(std::span<const int> tokens) {
  for (std::size_t length = 1; length <= tokens.size(); ++length) {
    const int n = repeated_ngram_at_end(tokens.first(length));
    if (n > 0) return length - static_cast<std::size_t>((kRepeatCopies - 1) * n);
  }
  return tokens.size();
}

WindowRules WindowRules::create(const EncoderDecoderContract& contract,
                                const std::vector<std::uint8_t>& special, bool timestamps) {
  WindowRules rules;
  rules.contract = contract;
  const auto vocab = static_cast<std::size_t>(contract.vocab_size);
  rules.suppressed.assign(vocab, 0);
  for (std::size_t id = 0; id < std::min(vocab, special.size()); ++id)
    rules.suppressed[id] = special[id];
  // Timestamp ids are never text (a tokenizer may not mark them special): they are said only
  // when the window decodes with timestamps; <|notimestamps|> (special) stays suppressed then.
  if (contract.timestamp_begin_id >= 0) {
    for (auto id = static_cast<std::size_t>(contract.timestamp_begin_id); id < vocab; ++id)
      rules.suppressed[id] = timestamps ? 0 : 1;
  }
  if (timestamps)
    rules.timestamps.emplace(contract.timestamp_begin_id, contract.eos_id, contract.vocab_size);
  for (int id : contract.suppress_tokens) rules.suppressed[static_cast<std::size_t>(id)] = 1;
  rules.suppressed[static_cast<std::size_t>(contract.eos_id)] = 0;
  rules.begin_suppressed = rules.suppressed;
  for (int id : contract.begin_suppress_tokens)
    rules.begin_suppressed[static_cast<std::size_t>(id)] = 1;
  return rules;
}

void WindowRules::filter(std::span<const int> sampled, float* logits) const {
  const std::vector<std::uint8_t>& mask = sampled.empty() ? begin_suppressed : suppressed;
  constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();
  for (int id = 0; id < contract.vocab_size; ++id) {
    if (mask[static_cast<std::size_t>(id)]) logits[id] = kMinusInfinity;
  }
  if (timestamps) timestamps->apply(sampled, logits);
}

WindowSearch::WindowSearch(std::shared_ptr<const WindowRules> rules, std::vector<int> prompt,
                           std::optional<WindowSampling> sampling)
    : rules_(std::move(rules)), prompt_(std::move(prompt)), sampling_(sampling) {}

void WindowSearch::observe_first_position(const float* logits) {
  const int no_speech = rules_->contract.no_speech_id;
  if (no_speech < 0) return;
  no_speech_probability_ = std::exp(static_cast<double>(logits[no_speech]) -
                                    log_sum_exp(logits, rules_->contract.vocab_size));
}

void WindowSearch::advance(float* logits, std::vector<int>& sources) {
  sources.clear();
  if (accept_logits(logits)) sources.push_back(0);
}

WindowOutcome WindowSearch::outcome() const {
  return {tokens_, no_speech_probability_, mean_log_probability(), is_silence()};
}

bool WindowSearch::accept_logits(float* logits) {
  if (done_) return false;
  const int vocab = rules_->contract.vocab_size;
  rules_->filter(tokens_, logits);
  // The first highest logit (ties: the lowest id, as torch.argmax), or a draw.
  int chosen = static_cast<int>(std::max_element(logits, logits + vocab) - logits);
  if (sampling_) {
    const int drawn =
        sample_token(logits, vocab, sampling_->temperature,
                     sampling_uniform(sampling_->key, static_cast<std::uint64_t>(choices_)));
    if (drawn >= 0) chosen = drawn;
  }
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
  ngram = repeated_ngram_at_end(tokens_);
  return ngram > 0;
}

int WindowSearch::last_token() const {
  return tokens_.empty() ? prompt_.back() : tokens_.back();
}

int WindowSearch::past_length() const {
  return static_cast<int>(prompt_.size() + tokens_.size()) - 1;
}

double WindowSearch::mean_log_probability() const {
  return choices_ == 0 ? 0.0 : sum_log_probability_ / choices_;
}

bool WindowSearch::is_silence() const {
  return voxrt::stream::is_silence(rules_->contract, no_speech_probability_,
                                   mean_log_probability());
}

}  // namespace voxrt::stream
