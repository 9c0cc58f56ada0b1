// What a decoder reports: text, tokens with the frames they span, and words with times in
// seconds and confidences. Frame indices are global to the stream (they keep counting across
// utterances), so timestamps stay continuous after an endpoint.
#pragma once

#include <string>
#include <vector>

#include "decode/vocabulary.h"

namespace voxrt::decode {

// How model output frames map to time.
struct TimeBase {
  // Feature frames per output frame.
  int subsampling = 1;
  double frame_shift_ms = 10.0;

  // A CTC model emits a unit after it has heard it: word times are moved back by the model's
  // measured delays (metadata voxrt.word_start_delay_ms / voxrt.word_end_delay_ms), never
  // before 0, and a word ends at least one output frame after its start.
  double word_start_delay_s = 0.0;
  double word_end_delay_s = 0.0;

  double seconds(long long output_frame) const {
    return static_cast<double>(output_frame) * subsampling * frame_shift_ms / 1000.0;
  }
};

struct TokenSpan {
  int id = 0;
  // Output frames [start_frame, end_frame] where the token was emitted (repeats included).
  long long start_frame = 0;
  long long end_frame = 0;
  // Highest log-posterior of the token over its frames.
  float peak_log_posterior = 0.0f;
};

struct WordResult {
  std::string word;
  double start_s = 0.0;
  // One output frame past the last frame of the word's last token.
  double end_s = 0.0;
  // Mean over the word's tokens of each token's peak posterior, in (0, 1].
  float confidence = 0.0f;
};

// A stretch of text with the times the model gave it (Whisper's timestamp tokens), in seconds
// from the stream's start.
struct SegmentResult {
  std::string text;
  double start_s = 0.0;
  double end_s = 0.0;
};

struct DecodingResult {
  std::string text;
  std::vector<TokenSpan> tokens;
  std::vector<WordResult> words;
  // Segments with times, where the model says them (encoder_decoder models decoding with
  // timestamps); empty otherwise.
  std::vector<SegmentResult> segments;
  // The language of the text as the model's language token names it ("en"), where the model has
  // them (multilingual encoder_decoder models); empty otherwise.
  std::string language;
  // The search score of the hypothesis (acoustic + weighted LM + bonuses); greedy: acoustic.
  double score = 0.0;
  bool is_final = false;
};

DecodingResult make_result(const Vocabulary& vocabulary, std::vector<TokenSpan> tokens,
                           const TimeBase& time_base, double score, bool is_final);

}  // namespace voxrt::decode
