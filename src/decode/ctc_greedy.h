// CTC greedy (best path) decoding: the argmax unit of each frame, repeats merged, blanks
// dropped. A per-stream decoder takes frames chunk by chunk; the batch entry point advances many
// streams from one [batch, frames, vocab] output.
#pragma once

#include <memory>
#include <span>

#include "decode/decoding_result.h"
#include "decode/log_probs.h"

namespace voxrt::decode {

class GreedyCtcDecoder {
 public:
  GreedyCtcDecoder(std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base);

  Status accept(LogProbView chunk);
  // The text so far (is_final false), or the utterance's final result.
  DecodingResult partial() const;
  DecodingResult finalize() const;
  // Starts a new utterance; frame numbering continues.
  void reset_utterance();

  // Output frames in the current utterance, and how many of the last ones were blank.
  long long utterance_frames() const { return frames_seen_ - utterance_start_frame_; }
  long long trailing_blank_frames() const { return trailing_blank_frames_; }
  bool has_tokens() const { return !tokens_.empty(); }
  long long frames_seen() const { return frames_seen_; }

 private:
  std::shared_ptr<const Vocabulary> vocabulary_;
  TimeBase time_base_;
  std::vector<TokenSpan> tokens_;
  int previous_id_ = -1;
  double score_ = 0.0;
  long long frames_seen_ = 0;
  long long utterance_start_frame_ = 0;
  long long trailing_blank_frames_ = 0;
};

// Advances decoders[b] by stream b of `batch`; decoders.size() must equal batch.batch.
Status greedy_accept_batch(BatchLogProbView batch, std::span<GreedyCtcDecoder* const> decoders);

}  // namespace voxrt::decode
