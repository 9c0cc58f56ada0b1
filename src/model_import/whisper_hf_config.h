// Reads a Hugging Face Whisper folder's configuration as transformers writes it: config.json
// (d_model, encoder/decoder layers and heads, num_mel_bins, vocab_size, max_source_positions,
// max_target_positions), generation_config.json (decoder_start_token_id, eos_token_id,
// no_timestamps_token_id, lang_to_id, task_to_id, suppress_tokens, begin_suppress_tokens) and the
// tokenizer files (vocab.json with added_tokens.json or tokenizer.json). Errors name the file and
// the key that is missing or wrong.
#pragma once

#include <string>

#include "stream/encoder_decoder/encoder_decoder_contract.h"

namespace voxrt::model_import {

struct WhisperHfConfig {
  int d_model = 0;
  int encoder_layers = 0;
  int decoder_layers = 0;
  int decoder_heads = 0;
  int max_source_positions = 0;
  // The contract the bundle carries (prompt, special tokens, suppression, tokenizer files).
  stream::EncoderDecoderContract contract;
  // The tokenizer files found in the model folder (added_tokens may be empty).
  std::string vocab_path;
  std::string added_tokens_path;
  // merges.txt; empty when the folder has none.
  std::string merges_path;
  // The prompt's language, as lang_to_id spells it ("<|en|>"); empty for English-only models
  // and where each stream's language is detected.
  std::string language_token;
};

// `language`: "en", "de", ... (lang_to_id's "<|en|>"), or empty: a multilingual model detects
// each stream's language from its first window. English-only models (no lang_to_id) ignore it.
Expected<WhisperHfConfig> read_whisper_hf_config(const std::string& dir,
                                                 const std::string& language = "");

}  // namespace voxrt::model_import
