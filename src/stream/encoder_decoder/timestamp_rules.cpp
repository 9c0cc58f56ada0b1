#include "stream/encoder_decoder/timestamp_rules.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace voxrt::stream {
namespace {

constexpr float kMinusInfinity = -std::numeric_limits<float>::infinity();

void mask(float* logits, int begin, int end) {
  for (int id = std::max(begin, 0); id < end; ++id) logits[id] = kMinusInfinity;
}

}  // namespace

TimestampRules::TimestampRules(int timestamp_begin_id, int eos_id, int vocab_size)
    : timestamp_begin_id_(timestamp_begin_id),
      eos_id_(eos_id),
      vocab_size_(vocab_size),
      // 1.0 s / 0.02 s = 50: the index of the latest first timestamp allowed.
      max_initial_index_(
          static_cast<int>(std::lround(kMaxInitialTimestampSeconds / kTimestampStepSeconds))) {}

void TimestampRules::apply(std::span<const int> sampled, float* logits) const {
  const int begin = timestamp_begin_id_;
  const std::size_t n = sampled.size();
  const bool last_is_timestamp = n >= 1 && is_timestamp(sampled[n - 1]);
  // With no token before the last one, the last (the window's first timestamp) counts as a
  // pair: text must follow it.
  const bool penultimate_is_timestamp = n < 2 || is_timestamp(sampled[n - 2]);
  if (last_is_timestamp) {
    if (penultimate_is_timestamp) {
      mask(logits, begin, vocab_size_);
    } else {
      mask(logits, 0, eos_id_);
    }
  }
  for (std::size_t i = n; i-- > 0;) {
    if (!is_timestamp(sampled[i])) continue;
    // A segment's start may repeat the end just said; any other timestamp is later than the last.
    const bool after_segment_end = last_is_timestamp && !penultimate_is_timestamp;
    mask(logits, begin, after_segment_end ? sampled[i] : sampled[i] + 1);
    break;
  }
  if (n == 0) {
    mask(logits, 0, begin);
    mask(logits, begin + max_initial_index_ + 1, vocab_size_);
  }
  // log P(any timestamp) against log P(the best text token), over the logits as they are now.
  float max_logit = kMinusInfinity;
  for (int id = 0; id < vocab_size_; ++id) max_logit = std::max(max_logit, logits[id]);
  if (!std::isfinite(max_logit)) return;
  double timestamp_sum = 0.0;
  float max_text_logit = kMinusInfinity;
  for (int id = 0; id < vocab_size_; ++id) {
    if (!std::isfinite(logits[id])) continue;
    const double p = std::exp(static_cast<double>(logits[id]) - max_logit);
    if (id < begin) {
      max_text_logit = std::max(max_text_logit, logits[id]);
    } else {
      timestamp_sum += p;
    }
  }
  // Both sides share the softmax's denominator, so the sums compare as they are.
  const double max_text_p = std::isfinite(max_text_logit)
                                ? std::exp(static_cast<double>(max_text_logit) - max_logit)
                                : 0.0;
  if (timestamp_sum > max_text_p) mask(logits, 0, begin);
}

std::vector<WindowSegment> split_segments(std::span<const int> tokens, const TimestampRules& rules,
                                          double window_s) {
  std::vector<WindowSegment> segments;
  const int n = static_cast<int>(tokens.size());
  if (n == 0) return segments;
  auto is_timestamp = [&](int i) {
    return rules.is_timestamp(tokens[static_cast<std::size_t>(i)]);
  };
  // A segment's first token is a timestamp (the rules make it one); 0 s if not.
  auto seconds = [&](int i) {
    return is_timestamp(i) ? rules.seconds(tokens[static_cast<std::size_t>(i)]) : 0.0;
  };
  // Where a pair of timestamps splits the tokens: at the pair's second.
  std::vector<int> cuts;
  for (int i = 1; i < n; ++i) {
    if (is_timestamp(i - 1) && is_timestamp(i)) cuts.push_back(i);
  }
  const bool single_timestamp_ending = n >= 2 && !is_timestamp(n - 2) && is_timestamp(n - 1);
  if (cuts.empty()) {
    double end_s = window_s;
    for (int i = n - 1; i >= 0; --i) {
      if (!is_timestamp(i)) continue;
      if (seconds(i) > 0.0) end_s = seconds(i);
      break;
    }
    segments.push_back({0, n, 0.0, end_s});
    return segments;
  }
  int first = 0;
  for (int cut : cuts) {
    segments.push_back({first, cut, seconds(first), seconds(cut - 1)});
    first = cut;
  }
  if (first < n) {
    // The tokens after the last pair: up to a lone timestamp at the end, or to the window's end.
    segments.push_back(
        {first, n, seconds(first), single_timestamp_ending ? seconds(n - 1) : window_s});
  }
  return segments;
}

}  // namespace voxrt::stream
