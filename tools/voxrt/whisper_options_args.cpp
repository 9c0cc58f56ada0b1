#include "whisper_options_args.h"

#include <cstdlib>
#include <sstream>

namespace voxrt::cli {

void add_whisper_options(CLI::App* cmd, WhisperOptionArgs& args) {
  cmd->add_option("--task", args.task,
                  "Whisper models: transcribe | translate (to English; multilingual models)")
      ->capture_default_str();
  cmd->add_option("--initial-prompt", args.initial_prompt,
                  "Whisper models: text the first window is conditioned on (tokenized with the "
                  "model's BPE; needs its merges.txt)");
  cmd->add_flag("--no-condition-on-previous-text", args.no_condition_on_previous_text,
                "Whisper models: do not start a window's prompt with the text decoded before it");
  cmd->add_flag("--temperature-fallback", args.temperature_fallback,
                "Whisper models: OpenAI's fallback, temperatures 0,0.2,0.4,0.6,0.8,1.0");
  cmd->add_option("--temperatures", args.temperatures,
                  "Whisper models: the fallback's temperatures, ascending, e.g. 0,0.5,1 "
                  "(default: 0, no fallback)");
  cmd->add_option("--compression-ratio-threshold", args.compression_ratio_threshold,
                  "Whisper models: fall back when the window's text's gzip compression ratio "
                  "is above this")
      ->capture_default_str();
  cmd->add_option("--logprob-threshold", args.logprob_threshold,
                  "Whisper models: fall back when the mean token log-probability is below this "
                  "(default: the model's, OpenAI's -1)");
  cmd->add_option("--no-speech-threshold", args.no_speech_threshold,
                  "Whisper models: with a low log-probability, a window whose P(no speech) is "
                  "above this is silence (default: the model's, OpenAI's 0.6)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--seed", args.seed,
                  "Whisper models: seed of the fallback's sampling (the same seed gives the "
                  "same text)")
      ->capture_default_str();
}

Expected<stream::EncoderDecoderOptions> whisper_options(const WhisperOptionArgs& args) {
  stream::EncoderDecoderOptions options;
  if (args.task != "transcribe" && args.task != "translate")
    return invalid_argument("--task '", args.task, "': expected transcribe or translate");
  options.task =
      args.task == "translate" ? stream::WhisperTask::kTranslate : stream::WhisperTask::kTranscribe;
  options.initial_prompt = args.initial_prompt;
  options.condition_on_previous_text = !args.no_condition_on_previous_text;
  if (args.temperature_fallback)
    options.fallback.temperatures = stream::TemperatureFallbackConfig::openai_temperatures();
  if (!args.temperatures.empty()) {
    options.fallback.temperatures.clear();
    std::istringstream list(args.temperatures);
    for (std::string item; std::getline(list, item, ',');) {
      char* end = nullptr;
      const double t = std::strtod(item.c_str(), &end);
      if (item.empty() || end != item.c_str() + item.size()) {
        return invalid_argument("--temperatures '", args.temperatures, "': '", item,
                                "' is not a number (expected e.g. 0,0.2,0.4)");
      }
      options.fallback.temperatures.push_back(t);
    }
  }
  options.fallback.compression_ratio_threshold = args.compression_ratio_threshold;
  options.fallback.logprob_threshold = args.logprob_threshold;
  options.fallback.no_speech_threshold = args.no_speech_threshold;
  options.fallback.seed = args.seed;
  VOXRT_RETURN_IF_ERROR(options.validate());
  return options;
}

}  // namespace voxrt::cli
