#include "decode/decoding_choices.h"

#include <sstream>

namespace voxrt::decode {

Status DecodingChoices::validate() const {
  if (beam_width && (*beam_width < 1 || *beam_width > 1024))
    return invalid_argument("beam_width must be 1..1024, got ", *beam_width);
  if (lm_weight && !(*lm_weight >= 0.0f && *lm_weight <= 10.0f))
    return invalid_argument("lm_weight must be 0..10, got ", *lm_weight);
  if (word_bonus && !(*word_bonus >= -20.0f && *word_bonus <= 20.0f))
    return invalid_argument("word_bonus must be -20..20, got ", *word_bonus);
  if (hotword_bonus && !(*hotword_bonus >= 0.0f && *hotword_bonus <= 20.0f))
    return invalid_argument("hotword_bonus must be 0..20, got ", *hotword_bonus);
  return Status::ok();
}

DecodingChoices DecodingChoices::over(const DecodingChoices& base) const {
  DecodingChoices out = base;
  if (beam_width) out.beam_width = beam_width;
  if (lm_weight) out.lm_weight = lm_weight;
  if (word_bonus) out.word_bonus = word_bonus;
  if (hotword_bonus) out.hotword_bonus = hotword_bonus;
  if (lexicon_only) out.lexicon_only = lexicon_only;
  if (timestamps) out.timestamps = timestamps;
  return out;
}

std::string DecodingChoices::to_string() const {
  std::ostringstream out;
  out << "{";
  if (beam_width) out << " beam_width=" << *beam_width;
  if (lm_weight) out << " lm_weight=" << *lm_weight;
  if (word_bonus) out << " word_bonus=" << *word_bonus;
  if (hotword_bonus) out << " hotword_bonus=" << *hotword_bonus;
  if (lexicon_only) out << " lexicon_only=" << *lexicon_only;
  if (timestamps) out << " timestamps=" << *timestamps;
  out << " }";
  return out.str();
}

}  // namespace voxrt::decode
