#include "stream/encoder_decoder/stream_choices.h"

#include <algorithm>
#include <cmath>

namespace voxrt::stream {

Status WhisperStreamChoices::validate() const {
  if (initial_prompt && initial_prompt->size() > kMaxInitialPromptBytes) {
    return invalid_argument("prompt is ", initial_prompt->size(), " bytes, at most ",
                            kMaxInitialPromptBytes, " are allowed");
  }
  if (temperature && !(std::isfinite(*temperature) && *temperature >= 0.0 && *temperature <= 1.0))
    return invalid_argument("temperature must be a number from 0 to 1, found ", *temperature);
  return Status::ok();
}

std::vector<double> fallback_temperatures_from(double first) {
  std::vector<double> temperatures;
  constexpr double kSlack = 1e-6;
  for (int i = 0;; ++i) {
    // Rounded to 1e-6: 0 + 3 x 0.2 is 0.6000000000000001 in doubles, and the ladder from 0 must
    // be OpenAI's 0, 0.2, ..., 1.0 (EncoderDecoderOptions' openai_temperatures) exactly.
    const double t = std::round((first + i * WhisperStreamChoices::kFallbackStep) * 1e6) / 1e6;
    if (t > 1.0 + kSlack) break;
    temperatures.push_back(std::min(t, 1.0));
  }
  if (temperatures.empty()) temperatures.push_back(first);  // a first temperature above 1
  return temperatures;
}

EncoderDecoderOptions WhisperStreamChoices::over(const EncoderDecoderOptions& base) const {
  EncoderDecoderOptions options = base;
  if (initial_prompt) options.initial_prompt = *initial_prompt;
  if (temperature || temperature_fallback) {
    const double first = temperature.value_or(base.fallback.temperatures.front());
    const bool fallback = temperature_fallback.value_or(base.fallback.temperatures.size() > 1);
    options.fallback.temperatures =
        fallback ? fallback_temperatures_from(first) : std::vector<double>{first};
  }
  return options;
}

}  // namespace voxrt::stream
