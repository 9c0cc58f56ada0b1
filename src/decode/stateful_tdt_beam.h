// Beam search for TDT (token-and-duration) transducers with a prediction state per hypothesis
// (Parakeet-TDT: NeMo's LSTM prediction network), batched across streams. Written from the rules
// of NeMo's BeamTDTInfer (the score of a step is the unit's log-softmax over the unit logits plus
// the duration's log-softmax over the duration logits; hypotheses advance by different durations
// and so stand at different frames; equal unit sequences at the same frame merge), in the shape
// of modified beam search so that width 1 is exactly the greedy search
// (decode/stateful_transducer_search.h's TDT rules):
// - Every hypothesis carries the frame it stands at and the steps it took there. Each round
//   expands, per stream, the hypotheses at the stream's lowest frame t (one joiner call for those
//   of every stream of the batch, one decoder call for those that emitted since their last one).
// - A hypothesis at t extends by every (unit, duration) pair, scored by its score + log p(unit) +
//   log p(duration). A unit other than the blank is emitted (timestamped at frame t; its
//   confidence is log p(unit)) and its prediction state becomes the hypothesis's. The frame
//   advances by the duration; as in the greedy search, a blank of duration 0 moves one frame
//   (NeMo's greedy search would repeat it with the same inputs; its beam search moves a blank by
//   a non-zero duration only), and when the hypothesis reaches max_symbols_per_frame steps at t
//   it moves one frame more.
// - The candidates are the extensions plus the hypotheses waiting at later frames (with their
//   scores); the beam_width best are kept (ties: the lower hypothesis index, then the lower unit,
//   then the lower duration index; a waiting hypothesis comes before the extensions of later
//   ones), then kept candidates with equal units at the same frame merge (scores log-added, the
//   first one's state, times and step count kept). Selecting before merging is what makes width
//   1 the greedy search: merging first would let a blank's two durations that land on one frame
//   outvote the best single step.
// - A chunk ends when every hypothesis of the stream stands past its last frame. Frames past
//   the end are dropped, as the greedy search drops them: each hypothesis starts the next chunk
//   (segment) at its first frame, and hypotheses with equal units then merge.
// Hotwords go through the stream's context graph as in the RNN-T modified beam search: a chosen
// unit's bonus is added after the selection; an unfinished match gives it back at the end.
// Why not NeMo's own strategies: its `default` search expands one hypothesis at a time (a
// hypothesis per joiner call, no batching across streams) and stops a frame early by a score
// test; `maes` adds prefix search and an expansion threshold. This search keeps their scoring and
// their duration rules and is batched as voxrt's RNN-T modified beam search is.
#pragma once

#include <span>

#include "decode/stateful_transducer_beam.h"

namespace voxrt::decode {

// Advances streams[b] over its first valid_frames[b] encoder frames (layout as
// stateful_transducer_greedy's). The networks must have durations (TDT).
Status stateful_tdt_beam(StatefulTransducerNetworks& networks,
                         std::span<StatefulTransducerBeamSearch* const> streams,
                         const float* encoder_out, int frames_per_stream,
                         std::span<const int> valid_frames);

}  // namespace voxrt::decode
