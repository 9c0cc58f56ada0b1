#include "stream/encoder_decoder/window_prompt.h"

#include <algorithm>

namespace voxrt::stream {

PreviousText::PreviousText(std::vector<int> initial_prompt, int max_tokens,
                           bool condition_on_previous_text)
    : initial_prompt_(std::move(initial_prompt)),
      max_tokens_(std::max(0, max_tokens)),
      condition_(condition_on_previous_text) {
  reset();
}

void PreviousText::reset() {
  tokens_ = initial_prompt_;
}

void PreviousText::add_window(std::span<const int> tokens, double temperature) {
  // OpenAI: prompt_reset_since = len(all_tokens) after this window's tokens are added.
  if (!condition_ || temperature > 0.5) {
    tokens_.clear();
    return;
  }
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  // Only the last max_tokens_ are ever read: the rest need not be kept.
  const auto keep = static_cast<std::size_t>(max_tokens_);
  if (tokens_.size() > keep)
    tokens_.erase(tokens_.begin(), tokens_.end() - static_cast<std::ptrdiff_t>(keep));
}

std::span<const int> PreviousText::tokens() const {
  const std::span<const int> all(tokens_);
  const auto keep = std::min(all.size(), static_cast<std::size_t>(max_tokens_));
  return all.last(keep);
}

std::vector<int> window_prompt(const EncoderDecoderContract& c, int language, WhisperTask task,
                               bool timestamps, std::span<const int> previous) {
  std::vector<int> ids;
  if (c.sot_prev_id >= 0 && !previous.empty()) {
    const auto keep = std::min(previous.size(), static_cast<std::size_t>(c.max_previous_tokens()));
    ids.push_back(c.sot_prev_id);
    ids.insert(ids.end(), previous.end() - static_cast<std::ptrdiff_t>(keep), previous.end());
  }
  ids.push_back(c.sot_id);
  if (language >= 0) {
    ids.push_back(language);
    ids.push_back(task == WhisperTask::kTranslate ? c.translate_id : c.task_id);
  }
  if (!timestamps) ids.push_back(c.no_timestamps_id);
  return ids;
}

int start_of_transcript_index(const EncoderDecoderContract& c, std::span<const int> prompt) {
  // From the end: the previous text before it holds no special tokens, but search where it
  // cannot be mistaken anyway.
  for (std::size_t i = prompt.size(); i-- > 0;) {
    if (prompt[i] == c.sot_id) return static_cast<int>(i);
  }
  return 0;
}

}  // namespace voxrt::stream
