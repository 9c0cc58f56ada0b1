// The encoder_decoder family's contract keys (docs/model_contract.md "encoder_decoder"): what the
// importer (model_import/optimum_whisper.cpp) read from config.json, generation_config.json and
// the tokenizer files, written once into bundle.json's metadata so the Recognizer never reads the
// Hugging Face files again.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::stream {

struct EncoderDecoderContract {
  // Whisper has 51865 (v3: 51866); the bound keeps a bad file from sizing huge tables.
  static constexpr int kMaxVocabSize = 1 << 20;
  int mel_bins = 80;
  int decoder_layers = 0;
  int vocab_size = 0;
  // Tokens a window may hold, prompt included (config.json max_target_positions).
  int max_target_positions = 0;
  // The prompt fed to decoder_model is [<|startofprev|> previous text] <|startoftranscript|>
  // [<|lang|> <|transcribe|>] [<|notimestamps|>] (window_prompt.h builds it): the language for
  // multilingual models, and <|notimestamps|> unless the stream decodes with timestamp tokens.
  int sot_id = -1;
  // -1: a multilingual model detects the language from each stream's first window (OpenAI
  // Whisper's rule: one decoder call on <|startoftranscript|>, the most likely language token);
  // an English-only model (no `languages`) names none.
  int language_id = -1;
  int task_id = -1;  // <|transcribe|>; -1 for English-only models
  // <|translate|> (generation_config's task_to_id "translate"); -1: the model cannot translate.
  int translate_id = -1;
  // <|startofprev|>: a window's prompt may start with the text decoded before it
  // (window_prompt.h); -1: the model has none (or the bundle predates the key), never conditioned.
  int sot_prev_id = -1;
  int no_timestamps_id = -1;
  // <|0.00|>: every id from it on is a timestamp, 0.02 s apart; -1: the model has none.
  int timestamp_begin_id = -1;
  // The language tokens of a multilingual model (generation_config's lang_to_id): "en", id.
  struct Language {
    std::string code;
    int id = -1;
  };
  std::vector<Language> languages;
  int eos_id = -1;
  // <|nospeech|> / <|nocaptions|>; -1: the model has none (no-speech check off).
  int no_speech_id = -1;
  // A window is silence when P(no_speech) after the prompt's first token exceeds this and the
  // mean log-probability of its tokens is below logprob_threshold (OpenAI Whisper's rule).
  double no_speech_threshold = 0.6;
  double logprob_threshold = -1.0;
  std::vector<int> suppress_tokens;
  std::vector<int> begin_suppress_tokens;
  // Tokenizer files inside the bundle folder.
  std::string vocab_file = "vocab.json";
  std::string added_tokens_file;
  // merges.txt (the BPE merges: encoding an initial prompt); empty: the model folder had none.
  std::string merges_file;

  bool multilingual() const { return !languages.empty(); }
  // Previous-text tokens a prompt holds after <|startofprev|> (OpenAI's n_text_ctx / 2 - 1);
  // 0 without <|startofprev|>.
  int max_previous_tokens() const { return sot_prev_id >= 0 ? max_target_positions / 2 - 1 : 0; }
  // The longest prompt (previous text, a language and <|notimestamps|>): the decoder engine's
  // longest input_ids, and what max_target_positions must exceed.
  int max_prompt_tokens() const {
    return (multilingual() ? 4 : 2) + (sot_prev_id >= 0 ? 1 + max_previous_tokens() : 0);
  }
  // "en" for a language token id; empty when it is none of `languages`.
  std::string language_code(int id) const;

  static Expected<EncoderDecoderContract> from_metadata(
      const std::map<std::string, std::string>& metadata, const std::string& where);
  // The voxrt.encoder_decoder.* keys (and voxrt.feature.*).
  std::map<std::string, std::string> to_metadata() const;
};

// The window search's repetition guard: a window stops when its last kRepeatCopies * n tokens
// are one n-token sequence (1 <= n <= kMaxRepeatTokens) said kRepeatCopies times; one copy stays.
inline constexpr int kMaxRepeatTokens = 16;
inline constexpr int kRepeatCopies = 4;
// A window with fewer frames of audio than this is not decoded (no text): only the tail of a
// stream whose audio ends within 12.5 ms after a window boundary can be that short.
inline constexpr int kMinWindowAudioFrames = 3;

}  // namespace voxrt::stream
