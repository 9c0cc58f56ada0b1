// One stream's own Whisper choices over the recognizer's EncoderDecoderOptions: what a server
// request sets per stream (OpenAI's /v1/audio/transcriptions `prompt` and `temperature` form
// fields, the WebSocket config's "prompt", "temperature" and "temperature_fallback"). Unset ones
// keep the recognizer's (voxrt serve --initial-prompt, --temperature-fallback, --temperatures).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "stream/encoder_decoder/decoding_options.h"
#include "voxrt/status.h"

namespace voxrt::stream {

struct WhisperStreamChoices {
  // The longest initial prompt a stream may send: a window's prompt keeps only the last
  // max_target_positions / 2 - 1 tokens (223 for Whisper) of it, and this bounds the BPE work.
  static constexpr std::size_t kMaxInitialPromptBytes = 4096;
  // The step between fallback temperatures (openai-whisper's temperature_increment_on_fallback).
  static constexpr double kFallbackStep = 0.2;

  // OpenAI's `prompt`: the text before the first window (EncoderDecoderOptions::initial_prompt).
  std::optional<std::string> initial_prompt;
  // OpenAI's `temperature`, 0..1: the first temperature a window is decoded at (0: the stream's
  // greedy or beam search; above 0: sampling).
  std::optional<double> temperature;
  // Whether a window that fails OpenAI's checks is decoded again at the next temperature:
  // temperature + 0.2, + 0.4, ... up to 1.0 (as openai-whisper's command line builds its list).
  std::optional<bool> temperature_fallback;

  bool empty() const { return !initial_prompt && !temperature && !temperature_fallback; }
  // Ranges; errors name the field, the range and the value found.
  Status validate() const;
  // `base` with these choices over it. With neither temperature nor temperature_fallback set,
  // base's temperatures stay as they are; otherwise they become the first temperature
  // (temperature, else base's first) followed, with the fallback (temperature_fallback, else
  // whether base has more than one temperature), by the steps of 0.2 up to 1.0.
  EncoderDecoderOptions over(const EncoderDecoderOptions& base) const;
};

// `first`, first + 0.2, first + 0.4, ... while at most 1.0 (each first + i x 0.2 rounded to
// 1e-6, so no error accumulates and the ladder from 0 is OpenAI's list to the bit).
std::vector<double> fallback_temperatures_from(double first);

}  // namespace voxrt::stream
