// Decoding choices a caller may leave open: the decoder kind and the beam-search settings that a
// model tunes together with its LM. The Recognizer resolves them (stream/recognizer.h); the
// server's protocol parses a client's (server/protocol.h).
#pragma once

#include <optional>
#include <string>

#include "voxrt/status.h"

namespace voxrt::decode {

enum class DecoderKind { kGreedy, kBeam };

// Decoding settings that may be left to the model. Unset ones come from the level below: a
// stream's over the recognizer's, the recognizer's over the model's tuned values for beam search
// with an LM (metadata voxrt.decoding.beam_width / lm_weight / word_bonus / hotword_bonus, which
// apply when the stream decodes with an LM), those over the built-in defaults
// (BeamSearchConfig; hotword bonus 1.5).
struct DecodingChoices {
  std::optional<int> beam_width;
  std::optional<float> lm_weight;
  std::optional<float> word_bonus;
  // Log-score bonus per matched hotword unit.
  std::optional<float> hotword_bonus;
  // Only words of the LM may be spelled (needs an LM).
  std::optional<bool> lexicon_only;
  // encoder_decoder (Whisper) models: decode with timestamp tokens, for segment times (the
  // other families' times come from their frames and ignore it).
  std::optional<bool> timestamps;

  // Every value that is set is in range; errors name the setting and the range.
  Status validate() const;
  // The values set here, the others from `base`.
  DecodingChoices over(const DecodingChoices& base) const;
  std::string to_string() const;
};

}  // namespace voxrt::decode
