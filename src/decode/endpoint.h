// Endpointing: decides when an utterance is over, with Kaldi's rules (online endpoint config;
// the defaults are Kaldi's and sherpa-onnx's) measured in the decoder's trailing blank frames,
// plus a VAD end-of-speech endpoint. After an endpoint the stream resets its decoder for a new
// utterance; frame numbers keep counting, so timestamps stay continuous.
#pragma once

#include <cstdint>
#include <string>

#include "decode/decoding_result.h"
#include "voxrt/status.h"

namespace voxrt::decode {

struct EndpointRule {
  // The rule applies only once the utterance has decoded a unit.
  bool must_contain_nonsilence = false;
  double min_trailing_silence_s = 0.0;
  double min_utterance_length_s = 0.0;
};

struct EndpointConfig {
  // rule1: long silence with nothing decoded.
  EndpointRule rule1{false, 2.4, 0.0};
  // rule2: shorter silence after some speech.
  EndpointRule rule2{true, 1.2, 0.0};
  // rule3: the utterance is long enough, whatever follows.
  EndpointRule rule3{false, 0.0, 20.0};
  // A VAD end-of-speech event ends the utterance too (when the stream runs a VAD).
  bool use_vad_endpoint = true;

  Status validate() const;
  std::string to_string() const;
};

enum class EndpointReason : std::uint8_t {
  kNone,
  kRule1TrailingSilence,
  kRule2TrailingSilenceAfterSpeech,
  kRule3MaxUtteranceLength,
  kVadEndOfSpeech,
};

const char* endpoint_reason_name(EndpointReason reason);

class EndpointDetector {
 public:
  static Expected<EndpointDetector> create(const EndpointConfig& config, TimeBase time_base);

  // From decoder counters: output frames in the utterance, trailing blank (non-speech) frames,
  // and whether any unit was decoded. `vad_speech_ended`: the VAD reported end of speech.
  EndpointReason detect(long long utterance_frames, long long trailing_blank_frames,
                        bool has_tokens, bool vad_speech_ended = false) const;

  const EndpointConfig& config() const { return config_; }

 private:
  EndpointDetector(const EndpointConfig& config, TimeBase time_base)
      : config_(config), time_base_(time_base) {}
  EndpointConfig config_;
  TimeBase time_base_;
};

}  // namespace voxrt::decode
