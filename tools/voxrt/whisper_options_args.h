// The Whisper (encoder_decoder) family's options on the command line, shared by `voxrt
// transcribe` and `voxrt serve`: the task, the initial prompt, conditioning on previous text and
// the temperature fallback (stream/encoder_decoder/decoding_options.h).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>

#include "stream/encoder_decoder/decoding_options.h"

namespace voxrt::cli {

struct WhisperOptionArgs {
  std::string task = "transcribe";
  std::string initial_prompt;
  bool no_condition_on_previous_text = false;
  bool temperature_fallback = false;
  std::string temperatures;  // "0,0.2,0.4"; empty: as --temperature-fallback says
  double compression_ratio_threshold = 2.4;
  std::optional<double> logprob_threshold;
  std::optional<double> no_speech_threshold;
  std::uint64_t seed = 0;
};

void add_whisper_options(CLI::App* cmd, WhisperOptionArgs& args);
// The options `args` set; errors name the flag and what was found.
Expected<stream::EncoderDecoderOptions> whisper_options(const WhisperOptionArgs& args);

}  // namespace voxrt::cli
