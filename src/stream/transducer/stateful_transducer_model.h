// The transducer_stateful family (docs/model_contract.md): a streaming encoder whose states live
// in its engine's state slot pool, as the transducer family's, with a prediction network that
// carries a state per hypothesis (an LSTM: torchaudio's Emformer RNN-T) instead of the last
// context_size units. A batch of streams runs one encoder call per chunk (a fixed window of
// chunk_frames feature frames - the segment and its right-context lookahead - advancing by
// shift_frames), then the stateful searches (decode/stateful_transducer_search.h greedy,
// decode/stateful_transducer_beam.h modified beam) over every stream of the batch at once.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "decode/vocabulary.h"
#include "runtime/state_pool.h"
#include "stream/bundle_manifest.h"
#include "stream/model_family.h"
#include "stream/transducer/lstm_transducer_networks.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

template <class Search>
class StatefulTransducerStream;

class StatefulTransducerModel final : public ModelFamily,
                                      public std::enable_shared_from_this<StatefulTransducerModel> {
 public:
  static Expected<std::shared_ptr<StatefulTransducerModel>> create(const BundleManifest& manifest,
                                                                   const std::string& folder,
                                                                   const RecognizerConfig& config);

  std::string_view name() const override { return "transducer_stateful"; }
  const audio::FeatureConfig& feature_config() const override { return feature_config_; }
  const ChunkLayout& chunk_layout() const override { return layout_; }
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return vocabulary_->size(); }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int streams_open() const override { return pool_->in_use(); }
  int max_batch() const override { return max_batch_; }
  bool hotwords_need_beam_search() const override { return true; }
  bool has_lm() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

  const LstmTransducerNetworks& networks() const { return *networks_; }

 private:
  template <class Search>
  friend class StatefulTransducerStream;
  StatefulTransducerModel() = default;

  std::shared_ptr<const Engine> encoder_;
  std::unique_ptr<ExecutionContext> encoder_context_;
  std::unique_ptr<StatePool> pool_;
  std::unique_ptr<LstmTransducerNetworks> networks_;
  audio::FeatureConfig feature_config_;
  ChunkLayout layout_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  int feature_dim_ = 0;
  int max_batch_ = 1;
  // Encoder inputs besides the states, by position in the pool's order: the features, and
  // optionally the valid frames of each row (torchaudio's `lengths`: always the whole window,
  // the last chunk's padding being the features of silence).
  int features_input_ = 0;
  int lengths_input_ = -1;
  DType lengths_dtype_ = DType::kI64;
  int encoder_output_ = 0;
  // The recognizer's max_symbols_per_frame, or for 0 the bundle's.
  int max_symbols_ = 3;
};

}  // namespace voxrt::stream
