// Greedy search for transducers whose prediction network has a state per hypothesis (NeMo's
// RNNTDecoder: an LSTM over the last unit with (h, c)), as NeMo decodes them, batched across
// streams: per step one joiner call for every stream that still has frames, one decoder call for
// the streams that emitted. Two kinds, by what the joiner returns:
// - RNN-T (NeMo's GreedyRNNTInfer): per encoder frame up to max_symbols_per_frame units; a
//   blank moves to the next frame.
// - TDT, token-and-duration (NeMo's GreedyTDTInfer): the joiner's logits are the units followed
//   by one logit per duration; the search emits the best unit (unless blank) and advances by the
//   best duration. At one frame it goes on while the duration is 0, up to max_symbols_per_frame
//   steps, and advances one more frame whenever that limit was reached. A blank with duration 0
//   would repeat itself (same inputs) until the limit, so it advances one frame at once.
// An emitted unit's prediction state replaces the hypothesis's. The state and the last unit
// carry across chunks (segments) of a stream. The networks are behind an interface, so this file
// knows no engine (decode/transducer_search.h is the stateless kind's search).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decode/decoding_result.h"
#include "decode/transducer_search.h"

namespace voxrt::decode {

// The prediction and joint networks, batched by rows.
class StatefulTransducerNetworks {
 public:
  virtual ~StatefulTransducerNetworks() = default;
  // Unit classes, the blank included (the joiner's first vocab_size logits).
  virtual int vocab_size() const = 0;
  virtual int blank_id() const = 0;
  // TDT: the frames each duration logit stands for (after the unit logits); empty for RNN-T.
  virtual const std::vector<int>& durations() const = 0;
  // Floats of one hypothesis's prediction state (zeros: a stream's start).
  virtual int state_size() const = 0;
  virtual int decoder_dim() const = 0;
  virtual int encoder_dim() const = 0;
  // rows units (the blank: the start) with their states (rows x state_size) -> rows x decoder_dim
  // outputs and the states after the unit (rows x state_size).
  virtual Status run_decoder(std::span<const std::int64_t> units, std::span<const float> states,
                             int rows, std::vector<float>& decoder_out,
                             std::vector<float>& next_states) = 0;
  // rows x encoder_dim and rows x decoder_dim -> rows x (vocab_size + durations) logits.
  virtual Status run_joiner(std::span<const float> encoder_frames,
                            std::span<const float> decoder_out, int rows,
                            std::vector<float>& logits) = 0;
};

// One stream's greedy hypothesis. With hotwords, a unit that extends a phrase competes with its
// bonus (ContextGraph::greedy_choice), as in the stateless transducer's greedy search.
class StatefulTransducerStreamSearch {
 public:
  StatefulTransducerStreamSearch(std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base,
                                 int max_symbols_per_frame, int state_size,
                                 std::shared_ptr<const ContextGraph> hotwords = nullptr);

  // Frames that skipped the model (VAD silence): blank.
  void accept_skipped_frames(int frames);
  DecodingResult partial() const;
  DecodingResult finalize();
  // A new utterance: the units are cleared, the prediction state and last unit stay.
  void reset_utterance();
  // Back to a stream's start: the blank as last unit and zero state.
  void reset_state();
  long long utterance_frames() const { return frames_seen_ - utterance_start_frame_; }
  long long trailing_blank_frames() const;
  bool has_tokens() const { return !tokens_.empty(); }

 private:
  friend Status stateful_transducer_greedy(StatefulTransducerNetworks&,
                                           std::span<StatefulTransducerStreamSearch* const>,
                                           const float*, int, std::span<const int>);
  std::shared_ptr<const Vocabulary> vocabulary_;
  TimeBase time_base_;
  int max_symbols_ = 1;
  std::shared_ptr<const ContextGraph> hotwords_;  // null: none
  int context_state_ = ContextGraph::kRoot;
  int unk_id_ = -1;  // "<unk>" gets no hotword bonus (-1: the vocabulary has none)
  // The last emitted unit (the blank before the first) and the state before it was fed.
  std::int64_t last_unit_ = 0;
  std::vector<float> state_;
  // The decoder's output and state after last_unit_ (empty until computed).
  std::vector<float> decoder_out_;
  std::vector<float> next_state_;
  std::vector<TokenSpan> tokens_;
  double log_prob_ = 0.0;
  long long last_emit_frame_ = -1;
  long long frames_seen_ = 0;
  long long utterance_start_frame_ = 0;
};

// Advances streams[b] over its first valid_frames[b] encoder frames, stream b's frames being
// encoder_out[b, 0..frames_per_stream) (each encoder_dim wide). A stream's result does not depend
// on the others in the batch.
Status stateful_transducer_greedy(StatefulTransducerNetworks& networks,
                                  std::span<StatefulTransducerStreamSearch* const> streams,
                                  const float* encoder_out, int frames_per_stream,
                                  std::span<const int> valid_frames);

}  // namespace voxrt::decode
