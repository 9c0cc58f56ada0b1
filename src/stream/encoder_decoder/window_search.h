// The searches over one 30 s window of an encoder-decoder (Whisper) model, without the engines:
// the family feeds a search the logits of each decoder call and it picks the next tokens under
// the window rules (docs/model_contract.md "encoder_decoder"):
// - suppressed ids (generation_config's suppress_tokens, and every special token except
//   end-of-text and, when the stream decodes with timestamps, the timestamp tokens) never win;
//   begin_suppress_tokens also not as the first token; with timestamps, TimestampRules;
// - the window ends at end-of-text, when prompt + tokens reach max_target_positions, or (greedy)
//   when the repetition guard fires (kRepeatCopies copies of one n-gram at the end: one copy
//   stays);
// - the window is silence (no text) when P(no_speech) at <|startoftranscript|> is above
//   no_speech_threshold and the mean log-probability of the chosen tokens (end-of-text included)
//   is below logprob_threshold, as OpenAI Whisper decides it.
// WindowSearch is the greedy search, or with a WindowSampling the sampling of the temperature
// fallback (token_sampling.h; the same rules, the log-probabilities at temperature 1 as OpenAI
// counts them); beam_search.h has the beam search. All are WindowDecoding, the interface the
// family's decode loop drives.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "stream/encoder_decoder/encoder_decoder_contract.h"
#include "stream/encoder_decoder/timestamp_rules.h"

namespace voxrt::stream {

// The contract's token rules as masks over the vocabulary, shared by every window that decodes
// the same way (with or without timestamps).
struct WindowRules {
  EncoderDecoderContract contract;
  std::vector<std::uint8_t> suppressed;        // never chosen
  std::vector<std::uint8_t> begin_suppressed;  // not chosen as a window's first token
  std::optional<TimestampRules> timestamps;    // set: the window decodes with timestamps

  // `special`: the tokenizer's special ids (suppressed, end-of-text and with `timestamps` the
  // timestamp ids excepted). `timestamps` needs the contract's timestamp_begin_id.
  static WindowRules create(const EncoderDecoderContract& contract,
                            const std::vector<std::uint8_t>& special, bool timestamps = false);

  // Applies the rules to `logits` (vocab values) for the token after `sampled` (the window's
  // tokens after the prompt): suppression, then the timestamp rules.
  void filter(std::span<const int> sampled, float* logits) const;
};

// What a window said.
struct WindowOutcome {
  std::vector<int> tokens;  // without end-of-text; timestamps included
  double no_speech_probability = 0.0;
  double mean_log_probability = 0.0;
  bool silence = false;
  // The temperature of the attempt that gave it (the family sets it; 0: the stream's search).
  double temperature = 0.0;
};

// WindowSearch samples instead of taking the most likely token: at `temperature` > 0, with the
// draws of token_sampling.h's `key` (sampling_key()).
struct WindowSampling {
  double temperature = 1.0;
  std::uint64_t key = 0;
};

// One window's search as the family's decode loop drives it: rows are the hypotheses that take
// the next decoder step, each extending the past (KV cache) of a row of the step before.
class WindowDecoding {
 public:
  virtual ~WindowDecoding() = default;
  // The logits at the prompt's <|startoftranscript|> (vocab values; after any previous text):
  // P(no_speech).
  virtual void observe_first_position(const float* logits) = 0;
  // Rows that take the next decoder step; 0: the window has ended.
  virtual int live_rows() const = 0;
  // The token row `row` feeds to the next step.
  virtual int next_token(int row) const = 0;
  // `logits`: live_rows() rows of vocab values (after each row's last token), changed in place.
  // Sets `sources` to one entry per row that goes on: the row of `logits` whose past it extends.
  virtual void advance(float* logits, std::vector<int>& sources) = 0;
  virtual WindowOutcome outcome() const = 0;
};

// log(sum(exp(logits))) over the ids whose logit is finite.
double log_sum_exp(const float* logits, int count);
// OpenAI Whisper's silence rule over the contract's thresholds.
bool is_silence(const EncoderDecoderContract& contract, double no_speech_probability,
                double mean_log_probability);

class WindowSearch final : public WindowDecoding {
 public:
  // `prompt`: the tokens the decoder's first call takes. `sampling`: sample (else greedy).
  WindowSearch(std::shared_ptr<const WindowRules> rules, std::vector<int> prompt,
               std::optional<WindowSampling> sampling = std::nullopt);

  void observe_first_position(const float* logits) override;
  int live_rows() const override { return done_ ? 0 : 1; }
  int next_token(int) const override { return last_token(); }
  void advance(float* logits, std::vector<int>& sources) override;
  WindowOutcome outcome() const override;

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
  std::vector<int> prompt_;
  std::optional<WindowSampling> sampling_;
  std::vector<int> tokens_;  // chosen, without end-of-text
  int choices_ = 0;          // tokens chosen, end-of-text included
  double sum_log_probability_ = 0.0;
  double no_speech_probability_ = 0.0;
  bool done_ = false;
};

// The repetition guard on `tokens`: the length they keep when their end is kRepeatCopies copies
// of one n-gram (one copy stays), else their length.
std::size_t length_without_repeats(std::span<const int> tokens);

}  // namespace voxrt::stream
