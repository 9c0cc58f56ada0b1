// OpenAI Whisper's temperature fallback, per window (decoding_options.h has the settings): the
// window is decoded at the first temperature; while its result fails the checks and
// temperatures are left, it is decoded again at the next one (above 0 by sampling,
// token_sampling.h), and the last result tried is the window's. The checks, as OpenAI's
// transcribe() makes them:
// - the text's gzip compression ratio (UTF-8 bytes over zlib's deflate of them at the default
//   level, as Python's zlib.compress) above compression_ratio_threshold: too repetitive;
// - the mean log-probability below logprob_threshold: too unsure;
// - but a window that is silence (P(no speech) above no_speech_threshold and the mean
//   log-probability below logprob_threshold) does not fall back: it is skipped.
#pragma once

#include <span>
#include <string_view>

#include "stream/encoder_decoder/decoding_options.h"
#include "stream/encoder_decoder/window_search.h"

namespace voxrt::stream {

// len(text) / len(zlib.compress(text)) over the UTF-8 bytes; 0 for an empty text.
double compression_ratio(std::string_view text);

class FallbackPolicy {
 public:
  // `logprob_threshold`, `no_speech_threshold`: resolved (the options' or the model's);
  // `has_no_speech_token`: false turns the silence exception off (no P(no speech) to read).
  FallbackPolicy(const TemperatureFallbackConfig& config, double logprob_threshold,
                 double no_speech_threshold, bool has_no_speech_token);

  int attempts() const { return static_cast<int>(temperatures_.size()); }
  double temperature(int attempt) const { return temperatures_[static_cast<std::size_t>(attempt)]; }
  // Whether a window decoded at attempt `attempt` with `outcome` (whose text is `text`) is
  // decoded again: it fails the checks and a later temperature is left.
  bool retry(int attempt, const WindowOutcome& outcome, std::string_view text) const;
  // Whether `outcome` fails the checks (whatever temperatures are left).
  bool fails_checks(const WindowOutcome& outcome, std::string_view text) const;

 private:
  std::vector<double> temperatures_;
  double compression_ratio_threshold_;
  double logprob_threshold_;
  double no_speech_threshold_;
  bool has_no_speech_token_;
};

}  // namespace voxrt::stream
