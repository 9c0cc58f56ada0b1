// The encoder_decoder (Whisper) family's decoding options beyond the search (RecognizerConfig::
// encoder_decoder; `voxrt transcribe --task/--initial-prompt/--no-condition-on-previous-text/
// --temperature-fallback ...`), as OpenAI Whisper's transcribe() names them:
// - the task: <|transcribe|> or <|translate|> in the prompt (translate: multilingual models only);
// - conditioning on previous text (window_prompt.h): each window's prompt starts with
//   <|startofprev|> and the last tokens decoded before it (the initial prompt first);
// - temperature fallback (fallback_policy.h): a window whose result looks wrong is decoded again
//   by sampling at higher temperatures.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::stream {

enum class WhisperTask { kTranscribe, kTranslate };

struct TemperatureFallbackConfig {
  // Temperatures tried in order; 0 decodes with the stream's search (greedy or beam), above 0
  // samples one sequence (token_sampling.h). The default {0} never falls back (voxrt's default,
  // so a window costs one decoding unless asked); OpenAI's is kOpenAiTemperatures.
  std::vector<double> temperatures = {0.0};
  // A window falls back when its text's gzip compression ratio is above this (too repetitive)...
  double compression_ratio_threshold = 2.4;
  // ... or its mean log-probability is below logprob_threshold, unless it is silence (P(no
  // speech) above no_speech_threshold and the mean log-probability below logprob_threshold):
  // silence is kept and skipped. Unset: the model's (bundle metadata; OpenAI's -1.0 and 0.6).
  std::optional<double> logprob_threshold;
  std::optional<double> no_speech_threshold;
  // Seeds the sampling; the same seed, audio and options give the same text.
  std::uint64_t seed = 0;

  static std::vector<double> openai_temperatures() { return {0.0, 0.2, 0.4, 0.6, 0.8, 1.0}; }
};

struct EncoderDecoderOptions {
  WhisperTask task = WhisperTask::kTranscribe;
  // OpenAI's condition_on_previous_text (default on, as OpenAI's); models without <|startofprev|>
  // are never conditioned.
  bool condition_on_previous_text = true;
  // Text before the first window (OpenAI's initial_prompt), tokenized with the model's BPE.
  std::string initial_prompt;
  TemperatureFallbackConfig fallback;

  // Ranges: temperatures 0..10 ascending (the first 0 or more), thresholds finite.
  Status validate() const;
  std::string to_string() const;
};

}  // namespace voxrt::stream
