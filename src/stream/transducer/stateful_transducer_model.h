// The transducer_stateful family (docs/model_contract.md): a streaming encoder whose states live
// in its engine's state slot pool, as the transducer family's, with a prediction network that
// carries a state per hypothesis (an LSTM: torchaudio's Emformer RNN-T) instead of the last
// context_size units. A batch of streams runs one encoder call per chunk (a fixed window of
// chunk_frames feature frames - the segment and its right-context lookahead - advancing by
// shift_frames), then the stateful searches (decode/stateful_transducer_search.h greedy,
// decode/stateful_transducer_beam.h modified beam) over every stream of the batch at once.
#pragma once

#include <memory>
#include <string>

#include "runtime/state_pool.h"
#include "stream/transducer/lstm_transducer_networks.h"
#include "stream/transducer/transducer_family.h"

namespace voxrt::stream {

class StatefulTransducerModel final : public TransducerFamily,
                                      public std::enable_shared_from_this<StatefulTransducerModel> {
 public:
  static Expected<std::shared_ptr<StatefulTransducerModel>> create(const BundleManifest& manifest,
                                                                   const std::string& folder,
                                                                   const RecognizerConfig& config);

  std::string_view name() const override { return "transducer_stateful"; }
  const audio::FeatureConfig& feature_config() const override { return front_end_.features; }
  const ChunkLayout& chunk_layout() const override { return front_end_.layout; }
  int streams_open() const override { return pool_->in_use(); }
  bool hotwords_need_beam_search() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

  const LstmTransducerNetworks& networks() const { return *networks_; }

 private:
  StatefulTransducerModel() = default;

  std::unique_ptr<StatePool> pool_;
  std::unique_ptr<LstmTransducerNetworks> networks_;
  StreamingFrontEnd front_end_;
  // Encoder inputs besides the states, by position in the pool's order: the features, and
  // optionally the valid frames of each row (torchaudio's `lengths`: always the whole window,
  // the last chunk's padding being the features of silence).
  int features_input_ = 0;
  int lengths_input_ = -1;
  DType lengths_dtype_ = DType::kI64;
  // voxrt.transducer.encoder_lengths: "window" feeds every row the chunk's frames (torchaudio's
  // Emformer: its trace computes with the whole window); "audio" feeds the frames that hold
  // audio, so a model that masks by length masks a last chunk's padding (NeMo's cache-aware
  // encoders).
  bool lengths_count_audio_ = false;
  int encoder_output_ = 0;
  // The recognizer's max_symbols_per_frame, or for 0 the bundle's.
  int max_symbols_ = 3;
};

}  // namespace voxrt::stream
