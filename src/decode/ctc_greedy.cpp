#include "decode/ctc_greedy.h"

namespace voxrt::decode {

GreedyCtcDecoder::GreedyCtcDecoder(std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base)
    : vocabulary_(std::move(vocabulary)), time_base_(time_base) {}

Status GreedyCtcDecoder::accept(LogProbView chunk) {
  if (chunk.vocab_size != vocabulary_->size()) {
    return invalid_argument("greedy CTC: expected log-probs over ", vocabulary_->size(),
                            " units, found ", chunk.vocab_size);
  }
  if (chunk.frames < 0 || (chunk.frames > 0 && chunk.data == nullptr)) {
    return invalid_argument("greedy CTC: expected a chunk of frames, found ", chunk.frames,
                            chunk.data == nullptr ? " and no data" : "");
  }
  const int blank = vocabulary_->blank_id();
  for (int t = 0; t < chunk.frames; ++t) {
    const float* row = chunk.frame(t);
    int best = 0;
    for (int v = 1; v < chunk.vocab_size; ++v) {
      if (row[v] > row[best]) best = v;
    }
    const long long frame = frames_seen_++;
    score_ += row[best];
    if (best == blank) {
      ++trailing_blank_frames_;
    } else {
      trailing_blank_frames_ = 0;
      if (best == previous_id_ && !tokens_.empty()) {
        tokens_.back().end_frame = frame;
        tokens_.back().peak_log_posterior = std::max(tokens_.back().peak_log_posterior, row[best]);
      } else {
        tokens_.push_back({best, frame, frame, row[best]});
      }
    }
    previous_id_ = best;
  }
  return Status::ok();
}

DecodingResult GreedyCtcDecoder::partial() const {
  return make_result(*vocabulary_, tokens_, time_base_, score_, false);
}

DecodingResult GreedyCtcDecoder::finalize() const {
  return make_result(*vocabulary_, tokens_, time_base_, score_, true);
}

void GreedyCtcDecoder::reset_utterance() {
  tokens_.clear();
  previous_id_ = -1;
  score_ = 0.0;
  utterance_start_frame_ = frames_seen_;
  trailing_blank_frames_ = 0;
}

Status greedy_accept_batch(BatchLogProbView batch, std::span<GreedyCtcDecoder* const> decoders) {
  if (static_cast<int>(decoders.size()) != batch.batch) {
    return invalid_argument("greedy CTC batch: expected ", batch.batch, " decoders, found ",
                            decoders.size());
  }
  for (int b = 0; b < batch.batch; ++b) {
    if (decoders[static_cast<std::size_t>(b)] == nullptr) {
      return invalid_argument("greedy CTC batch: decoder ", b, " is null");
    }
    VOXRT_RETURN_IF_ERROR(decoders[static_cast<std::size_t>(b)]
                              ->accept(batch.stream(b))
                              .with_context(str_cat("greedy CTC batch stream ", b)));
  }
  return Status::ok();
}

}  // namespace voxrt::decode
