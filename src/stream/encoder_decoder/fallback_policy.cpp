#include "stream/encoder_decoder/fallback_policy.h"

#include <zlib.h>

#include <vector>

namespace voxrt::stream {

double compression_ratio(std::string_view text) {
  if (text.empty()) return 0.0;
  uLongf packed_bytes = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> packed(packed_bytes);
  // compress() is deflate at Z_DEFAULT_COMPRESSION with zlib's header, as Python's
  // zlib.compress(data) writes it; only the length is used.
  if (compress(packed.data(), &packed_bytes, reinterpret_cast<const Bytef*>(text.data()),
               static_cast<uLong>(text.size())) != Z_OK)
    return 0.0;
  return static_cast<double>(text.size()) / static_cast<double>(packed_bytes);
}

FallbackPolicy::FallbackPolicy(const TemperatureFallbackConfig& config, double logprob_threshold,
                               double no_speech_threshold, bool has_no_speech_token)
    : temperatures_(config.temperatures),
      compression_ratio_threshold_(config.compression_ratio_threshold),
      logprob_threshold_(logprob_threshold),
      no_speech_threshold_(no_speech_threshold),
      has_no_speech_token_(has_no_speech_token) {
  if (temperatures_.empty()) temperatures_ = {0.0};
}

bool FallbackPolicy::fails_checks(const WindowOutcome& outcome, std::string_view text) const {
  const bool unsure = outcome.mean_log_probability < logprob_threshold_;
  const bool repetitive = compression_ratio(text) > compression_ratio_threshold_;
  const bool silence =
      has_no_speech_token_ && outcome.no_speech_probability > no_speech_threshold_ && unsure;
  return (repetitive || unsure) && !silence;
}

bool FallbackPolicy::retry(int attempt, const WindowOutcome& outcome, std::string_view text) const {
  return attempt + 1 < attempts() && fails_checks(outcome, text);
}

}  // namespace voxrt::stream
