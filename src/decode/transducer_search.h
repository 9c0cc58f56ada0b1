// Transducer (RNN-T) searches over a stateless prediction network (icefall / sherpa-onnx: the
// decoder sees the last `context_size` units) and a joint network, batched across streams: per
// encoder frame one joiner call for every live hypothesis of every stream, one decoder call for
// the hypotheses that emitted. Greedy search emits up to max_symbols_per_frame units per frame;
// modified beam search (icefall's modified_beam_search, sherpa-onnx's default) keeps
// beam_width hypotheses per stream, extends each by at most one unit per frame and merges
// hypotheses with equal unit sequences (log-add). Hotwords go through the stream's context graph
// in both. The networks are behind TransducerNetworks, so this file knows no engine.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "decode/context_graph.h"
#include "decode/decoding_result.h"

namespace voxrt::decode {

enum class TransducerSearchKind : std::uint8_t { kGreedy, kModifiedBeam };

struct TransducerSearchConfig {
  // Greedy: units one encoder frame may emit before the search moves on; 0: the model family's
  // default (sherpa-onnx's 1 for this search; NeMo's 10 for NeMo transducers, whose bundle says).
  int max_symbols_per_frame = 0;
  // Modified beam search: hypotheses kept per stream.
  int beam_width = 4;

  Status validate() const;
  std::string to_string() const;
};

// The prediction and joint networks, batched by rows. Implemented by the transducer family on
// its engines (and by tests on plain functions).
class TransducerNetworks {
 public:
  virtual ~TransducerNetworks() = default;
  virtual int context_size() const = 0;
  virtual int vocab_size() const = 0;
  virtual int blank_id() const = 0;
  // Width of a decoder output row and of an encoder output frame (the joiner's inputs).
  virtual int decoder_dim() const = 0;
  virtual int encoder_dim() const = 0;
  // contexts: rows x context_size units (-1: before the first unit) -> rows x decoder_dim.
  virtual Status run_decoder(std::span<const std::int64_t> contexts, int rows,
                             std::vector<float>& decoder_out) = 0;
  // rows x encoder_dim and rows x decoder_dim -> rows x vocab_size logits.
  virtual Status run_joiner(std::span<const float> encoder_frames,
                            std::span<const float> decoder_out, int rows,
                            std::vector<float>& logits) = 0;
};

struct TransducerHypothesis {
  // The last context_size units ever emitted (across utterances), -1 padded, blank-seeded.
  std::vector<std::int64_t> context;
  // This utterance's units with their frames and log-posteriors.
  std::vector<TokenSpan> tokens;
  // Acoustic log-probability plus hotword bonuses.
  double log_prob = 0.0;
  int context_state = ContextGraph::kRoot;
  // The decoder's output for `context` (empty until computed).
  std::vector<float> decoder_out;
  // Global output frame of the last emitted unit (-1: none this utterance).
  long long last_emit_frame = -1;
};

// One stream's search state.
class TransducerStreamSearch {
 public:
  TransducerStreamSearch(std::shared_ptr<const Vocabulary> vocabulary, TimeBase time_base,
                         TransducerSearchKind kind, TransducerSearchConfig config, int context_size,
                         std::shared_ptr<const ContextGraph> hotwords);

  // Frames that skipped the model (VAD silence): blank for every hypothesis.
  void accept_skipped_frames(int frames);
  DecodingResult partial() const;
  DecodingResult finalize();
  // Starts a new utterance: the best hypothesis's units stay as the decoder's context.
  void reset_utterance();
  // Back to a fresh stream's prediction-network state (the empty hypothesis's decoder context),
  // after reset_utterance; named as the stateful searches' reset_state, so one stream wrapper
  // (stream/transducer/search_stream.h) serves all three.
  void reset_state();
  long long utterance_frames() const { return frames_seen_ - utterance_start_frame_; }
  long long trailing_blank_frames() const;
  bool has_tokens() const { return !best().tokens.empty(); }
  long long frames_seen() const { return frames_seen_; }

  const TransducerHypothesis& best() const;
  TransducerSearchKind kind() const { return kind_; }

 private:
  friend Status transducer_search_chunk(TransducerNetworks&,
                                        std::span<TransducerStreamSearch* const>, const float*, int,
                                        std::span<const int>);
  std::shared_ptr<const Vocabulary> vocabulary_;
  TimeBase time_base_;
  TransducerSearchKind kind_;
  TransducerSearchConfig config_;
  std::shared_ptr<const ContextGraph> hotwords_;
  std::vector<TransducerHypothesis> hyps_;  // greedy: one
  int context_size_ = 0;
  int unk_id_ = -1;  // "<unk>": never emitted, no hotword bonus (-1: the vocabulary has none)
  long long frames_seen_ = 0;
  long long utterance_start_frame_ = 0;
};

// Advances streams[b] over `valid_frames[b]` frames of its encoder output, stream b's frames
// being encoder_out[b, 0..frames_per_stream) (each encoder_dim wide). Every stream must use the
// same search kind. A stream's result does not depend on the others in the batch.
Status transducer_search_chunk(TransducerNetworks& networks,
                               std::span<TransducerStreamSearch* const> streams,
                               const float* encoder_out, int frames_per_stream,
                               std::span<const int> valid_frames);

}  // namespace voxrt::decode
