// Modified beam search (icefall's modified_beam_search, one unit at most per hypothesis and
// encoder frame) for RNN-T models whose prediction network has a state per hypothesis (NeMo's
// LSTM), batched across streams: per encoder frame one joiner call for every hypothesis of every
// stream of the batch, one decoder call for the hypotheses that emitted.
// Per stream and frame: every (hypothesis, unit) extension is scored by the hypothesis's score
// plus the unit's log-softmax (the blank keeps the units); the beam_width best are kept
// (ties: the earlier hypothesis, then the lower unit id); extensions with equal unit sequences
// merge (their scores log-added, the first one's state kept: equal units give equal states). The
// result is the hypothesis with the best score. Hotwords go through the stream's context graph as
// in decode/transducer_search.h's beam search: the bonus of a chosen unit is added after the
// selection, an unfinished match gives it back at the end. TDT networks (durations) are searched
// by decode/stateful_tdt_beam.h's rules with the same hypotheses and streams. The networks are
// decode/stateful_transducer_search.h's interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "decode/context_graph.h"
#include "decode/decoding_result.h"
#include "decode/stateful_transducer_search.h"

namespace voxrt::decode {

class StatefulTransducerBeamSearch {
 public:
  StatefulTransducerBeamSearch(std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base,
                               int beam_width, int max_symbols_per_frame, int state_size,
                               std::shared_ptr<const ContextGraph> hotwords = nullptr);

  void accept_skipped_frames(int frames);
  DecodingResult partial() const;
  DecodingResult finalize();
  // A new utterance: the best hypothesis alone, its units cleared, its state and last unit kept.
  void reset_utterance();
  // Back to a stream's start: one hypothesis, the blank as last unit, zero state.
  void reset_state();
  long long utterance_frames() const { return frames_seen_ - utterance_start_frame_; }
  long long trailing_blank_frames() const;
  bool has_tokens() const { return !best().tokens.empty(); }

  struct Hypothesis {
    std::vector<std::int64_t> units;  // this utterance's units (the merge key)
    std::vector<TokenSpan> tokens;
    double log_prob = 0.0;
    std::int64_t last_unit = 0;
    std::vector<float> state;
    std::vector<float> decoder_out;  // empty until computed
    std::vector<float> next_state;
    long long last_emit_frame = -1;
    int context_state = ContextGraph::kRoot;
    // TDT only: the frame of the current chunk the hypothesis stands at (it may be past the
    // chunk's end) and the steps it took at that frame (for max_symbols_per_frame).
    int frame = 0;
    int symbols = 0;
  };
  const Hypothesis& best() const;

 private:
  friend Status stateful_transducer_beam(StatefulTransducerNetworks&,
                                         std::span<StatefulTransducerBeamSearch* const>,
                                         const float*, int, std::span<const int>);
  friend Status stateful_tdt_beam(StatefulTransducerNetworks&,
                                  std::span<StatefulTransducerBeamSearch* const>, const float*, int,
                                  std::span<const int>);
  std::shared_ptr<const Vocabulary> vocabulary_;
  TimeBase time_base_;
  int beam_width_ = 4;
  int max_symbols_ = 1;  // TDT only: steps per hypothesis and frame
  int state_size_ = 0;
  std::shared_ptr<const ContextGraph> hotwords_;
  std::vector<Hypothesis> hyps_;
  long long frames_seen_ = 0;
  long long utterance_start_frame_ = 0;
};

// Advances streams[b] over its first valid_frames[b] encoder frames (layout as
// stateful_transducer_greedy's). TDT networks (durations) go to stateful_tdt_beam.
Status stateful_transducer_beam(StatefulTransducerNetworks& networks,
                                std::span<StatefulTransducerBeamSearch* const> streams,
                                const float* encoder_out, int frames_per_stream,
                                std::span<const int> valid_frames);

// Extends h by a non-blank unit emitted at `frame` (both beam searches): its token, the
// prediction network's next state (its decoder output recomputed next round), and the hotword
// bonus when hotwords are given.
void emit_unit(StatefulTransducerBeamSearch::Hypothesis& h, int unit, long long frame,
               float log_posterior, const ContextGraph* hotwords);

// Buffers one beam search call reuses across its rounds (RNN-T and TDT).
struct BeamRoundScratch {
  std::vector<StatefulTransducerBeamSearch::Hypothesis*> stale;
  std::vector<std::int64_t> units;
  std::vector<float> states, decoder_out, next_states, dec_rows;
};

// One round's network calls, shared by both beam searches: the prediction network for the
// rows whose decoder output is not known yet (they emitted, or start), batched in one call, then
// the joiner over every row's (encoder frame from enc_rows, decoder output), batched in one call.
// `logits` gets the joiner's output, row by row; the caller checks its width.
Status run_round_networks(StatefulTransducerNetworks& networks,
                          std::span<StatefulTransducerBeamSearch::Hypothesis* const> rows,
                          const std::vector<float>& enc_rows, BeamRoundScratch& scratch,
                          std::vector<float>& logits);

}  // namespace voxrt::decode
