#include "stream/encoder_decoder/decoding_options.h"

#include <cmath>
#include <sstream>

namespace voxrt::stream {

Status EncoderDecoderOptions::validate() const {
  const auto& t = fallback.temperatures;
  if (t.empty()) return invalid_argument("encoder_decoder: temperatures is empty, expected e.g. 0");
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!(t[i] >= 0.0 && t[i] <= 10.0) || (i > 0 && !(t[i] > t[i - 1]))) {
      return invalid_argument(
          "encoder_decoder: temperatures must rise from 0 and stay at most 10, ", "found ", t[i],
          " at position ", i);
    }
  }
  if (!std::isfinite(fallback.compression_ratio_threshold))
    return invalid_argument("encoder_decoder: compression_ratio_threshold must be finite");
  if (fallback.logprob_threshold && !std::isfinite(*fallback.logprob_threshold))
    return invalid_argument("encoder_decoder: logprob_threshold must be finite");
  if (fallback.no_speech_threshold &&
      !(*fallback.no_speech_threshold >= 0.0 && *fallback.no_speech_threshold <= 1.0)) {
    return invalid_argument("encoder_decoder: no_speech_threshold must be 0..1, found ",
                            *fallback.no_speech_threshold);
  }
  return Status::ok();
}

std::string EncoderDecoderOptions::to_string() const {
  std::ostringstream out;
  out << "{ task=" << (task == WhisperTask::kTranslate ? "translate" : "transcribe")
      << " condition_on_previous_text=" << condition_on_previous_text;
  if (!initial_prompt.empty()) out << " initial_prompt='" << initial_prompt << "'";
  out << " temperatures=";
  for (std::size_t i = 0; i < fallback.temperatures.size(); ++i)
    out << (i ? "," : "") << fallback.temperatures[i];
  out << " compression_ratio_threshold=" << fallback.compression_ratio_threshold;
  if (fallback.logprob_threshold) out << " logprob_threshold=" << *fallback.logprob_threshold;
  if (fallback.no_speech_threshold) out << " no_speech_threshold=" << *fallback.no_speech_threshold;
  out << " seed=" << fallback.seed << " }";
  return out.str();
}

}  // namespace voxrt::stream
