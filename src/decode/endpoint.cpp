#include "decode/endpoint.h"

#include <cmath>
#include <sstream>

namespace voxrt::decode {
namespace {

bool rule_fires(const EndpointRule& rule, double utterance_s, double trailing_s, bool has_tokens) {
  if (rule.must_contain_nonsilence && !has_tokens) return false;
  // A rule with neither bound would fire on the first frame; treat it as disabled.
  if (rule.min_trailing_silence_s <= 0 && rule.min_utterance_length_s <= 0) return false;
  return trailing_s >= rule.min_trailing_silence_s && utterance_s >= rule.min_utterance_length_s;
}

std::string rule_string(const EndpointRule& rule) {
  std::ostringstream out;
  out << "{must_contain_nonsilence=" << rule.must_contain_nonsilence
      << " min_trailing_silence_s=" << rule.min_trailing_silence_s
      << " min_utterance_length_s=" << rule.min_utterance_length_s << "}";
  return out.str();
}

}  // namespace

const char* endpoint_reason_name(EndpointReason reason) {
  switch (reason) {
    case EndpointReason::kNone: return "none";
    case EndpointReason::kRule1TrailingSilence: return "rule1_trailing_silence";
    case EndpointReason::kRule2TrailingSilenceAfterSpeech: return "rule2_silence_after_speech";
    case EndpointReason::kRule3MaxUtteranceLength: return "rule3_max_utterance_length";
    case EndpointReason::kVadEndOfSpeech: return "vad_end_of_speech";
  }
  return "unknown";
}

Status EndpointConfig::validate() const {
  for (const EndpointRule* rule : {&rule1, &rule2, &rule3}) {
    if (!std::isfinite(rule->min_trailing_silence_s) ||
        !std::isfinite(rule->min_utterance_length_s) || rule->min_trailing_silence_s < 0 ||
        rule->min_utterance_length_s < 0) {
      return invalid_argument("endpoint config ", to_string(),
                              ": expected finite non-negative durations");
    }
  }
  return Status::ok();
}

std::string EndpointConfig::to_string() const {
  return str_cat("{rule1=", rule_string(rule1), " rule2=", rule_string(rule2),
                 " rule3=", rule_string(rule3), " use_vad_endpoint=", use_vad_endpoint, "}");
}

Expected<EndpointDetector> EndpointDetector::create(const EndpointConfig& config,
                                                    TimeBase time_base) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  if (time_base.subsampling < 1 || !(time_base.frame_shift_ms > 0)) {
    return invalid_argument("endpoint: expected subsampling >= 1 and frame_shift_ms > 0, found ",
                            time_base.subsampling, " and ", time_base.frame_shift_ms);
  }
  return EndpointDetector(config, time_base);
}

EndpointReason EndpointDetector::detect(long long utterance_frames, long long trailing_blank_frames,
                                        bool has_tokens, bool vad_speech_ended) const {
  if (vad_speech_ended && config_.use_vad_endpoint) return EndpointReason::kVadEndOfSpeech;
  const double utterance_s = time_base_.seconds(utterance_frames);
  const double trailing_s = time_base_.seconds(trailing_blank_frames);
  if (rule_fires(config_.rule1, utterance_s, trailing_s, has_tokens)) {
    return EndpointReason::kRule1TrailingSilence;
  }
  if (rule_fires(config_.rule2, utterance_s, trailing_s, has_tokens)) {
    return EndpointReason::kRule2TrailingSilenceAfterSpeech;
  }
  if (rule_fires(config_.rule3, utterance_s, trailing_s, has_tokens)) {
    return EndpointReason::kRule3MaxUtteranceLength;
  }
  return EndpointReason::kNone;
}

}  // namespace voxrt::decode
