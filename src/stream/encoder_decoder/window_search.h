// Greedy search over one 30 s window of an encoder-decoder (Whisper) model, without the engines:
// the family feeds it the logits of each decoder call and it picks the next token under the
// window rules (docs/model_contract.md "encoder_decoder"):
// - suppressed ids (generation_config's suppress_tokens, and every special token except
//   end-of-text: the prompt asks for no timestamps) never win; begin_suppress_tokens also not as
//   the first token;
// - the window ends at end-of-text, when prompt + tokens reach max_target_positions, or when the
//   repetition guard fires (kRepeatCopies copies of one n-gram at the end: one copy stays);
// - the window is silence (no text) when P(no_speech) at the prompt's first position is above
//   no_speech_threshold and the mean log-probability of the chosen tokens (end-of-text included)
//   is below logprob_threshold, as OpenAI Whisper decides it.
#pragma once

#include <memory>
#include <vector>

#include "stream/encoder_decoder/encoder_decoder_contract.h"

namespace voxrt::stream {

// The contract's token rules as masks over the vocabulary, shared by every window.
struct WindowRules {
  EncoderDecoderContract contract;
  std::vector<std::uint8_t> suppressed;        // never chosen
  std::vector<std::uint8_t> begin_suppressed;  // not chosen as a window's first token

  // `special`: the tokenizer's special ids (suppressed, end-of-text excepted).
  static WindowRules create(const EncoderDecoderContract& contract,
                            const std::vector<std::uint8_t>& special);
};

class WindowSearch {
 public:
  explicit WindowSearch(std::shared_ptr<const WindowRules> rules);

  // The logits at the prompt's first position (vocab values): P(no_speech).
  void observe_first_position(const float* logits);
  // The logits after the last token (vocab values, changed in place): picks the next token.
  // Returns false when the window has ended (done()).
  bool accept_logits(float* logits);

  bool done() const { return done_; }
  // The token the next decoder step takes, and the tokens (prompt included) before it.
  int last_token() const;
  int past_length() const;
  const std::vector<int>& text_tokens() const { return tokens_; }
  double no_speech_probability() const { return no_speech_probability_; }
  double mean_log_probability() const;
  bool is_silence() const;

 private:
  bool repeats_at_end(int& ngram) const;

  std::shared_ptr<const WindowRules> rules_;
  std::vector<int> tokens_;  // chosen, without end-of-text
  int choices_ = 0;          // tokens chosen, end-of-text included
  double sum_log_probability_ = 0.0;
  double no_speech_probability_ = 0.0;
  bool done_ = false;
};

}  // namespace voxrt::stream
