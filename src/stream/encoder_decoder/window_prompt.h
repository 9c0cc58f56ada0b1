// A window's prompt (docs/model_contract.md "encoder_decoder"), as OpenAI Whisper builds it:
//   [<|startofprev|> previous...] <|startoftranscript|> [<|lang|> <|transcribe|>|<|translate|>]
//   [<|notimestamps|>]
// The previous text is the stream's initial prompt followed by the tokens of its windows so far
// (timestamps included when it decodes with them; silent windows add nothing), its last
// EncoderDecoderContract::max_previous_tokens() tokens (n_text_ctx / 2 - 1); none when there
// is none, or the model has no <|startofprev|>. As OpenAI's transcribe() does it, after a window
// the previous text restarts empty (the initial prompt is not repeated) when conditioning is off
// or the window's result was sampled above temperature 0.5.
#pragma once

#include <span>
#include <vector>

#include "stream/encoder_decoder/decoding_options.h"
#include "stream/encoder_decoder/encoder_decoder_contract.h"

namespace voxrt::stream {

class PreviousText {
 public:
  // `initial_prompt`: token ids (the initial prompt's BPE tokens; may be empty).
  PreviousText(std::vector<int> initial_prompt, int max_tokens, bool condition_on_previous_text);

  // A decoded window that was not skipped as silence: its tokens, and the temperature of the
  // result kept.
  void add_window(std::span<const int> tokens, double temperature);
  // Back to the initial prompt (a new utterance).
  void reset();
  // At most max_tokens, the latest last.
  std::span<const int> tokens() const;

 private:
  std::vector<int> initial_prompt_;
  std::vector<int> tokens_;
  int max_tokens_;
  bool condition_;
};

// The prompt of a window: `language` a language token id (-1: none, an English-only model),
// `previous` what PreviousText::tokens() gives (left out when empty or the model has no
// <|startofprev|>).
std::vector<int> window_prompt(const EncoderDecoderContract& contract, int language,
                               WhisperTask task, bool timestamps, std::span<const int> previous);

// Where <|startoftranscript|> is in `prompt` (P(no speech) is read there).
int start_of_transcript_index(const EncoderDecoderContract& contract, std::span<const int> prompt);

}  // namespace voxrt::stream
