// A word n-gram language model read from an ARPA file (any order, backoff weights, <s>, </s>,
// <unk>). Probabilities are returned as natural logs. Immutable after loading: one model serves
// every stream; a stream's position in it is an ArpaLm::State.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::decode {

class ArpaLm {
 public:
  // The word ids of the context, oldest first, trimmed to the longest context the model has.
  using State = std::vector<int>;

  static Expected<ArpaLm> load(const std::string& path);
  static Expected<ArpaLm> parse(std::string_view text, std::string_view source_name);

  int order() const { return order_; }
  std::size_t ngram_count() const { return ngrams_.size(); }
  // -1 when the word is not in the model.
  int word_id(std::string_view word) const;
  // Every word of the model (including <s>, </s> and <unk> when listed), in no order.
  std::vector<std::string> words() const;

  // The state after <s>.
  State sentence_start() const;
  // ln P(word | state); `next` receives the state after the word. Words the model lacks score
  // as <unk> when it has one, otherwise as unknown_word_log_prob().
  float score(const State& state, std::string_view word, State& next) const;
  // ln P(</s> | state).
  float sentence_end_score(const State& state) const;
  float unknown_word_log_prob() const { return unknown_word_log_prob_; }

 private:
  struct Entry {
    float log_prob = 0.0f;  // natural log
    float backoff = 0.0f;   // natural log
  };
  float score_id(const State& state, int word, State& next) const;
  const Entry* find(const int* ids, std::size_t count) const;

  int order_ = 0;
  std::unordered_map<std::string, int> word_ids_;
  // Key: the n-gram's word ids as raw bytes.
  std::unordered_map<std::string, Entry> ngrams_;
  int sentence_start_id_ = -1;
  int sentence_end_id_ = -1;
  int unknown_id_ = -1;
  // Kaldi-like penalty for words outside a model without <unk>: log10 -10.
  float unknown_word_log_prob_ = -23.02585f;
};

}  // namespace voxrt::decode
