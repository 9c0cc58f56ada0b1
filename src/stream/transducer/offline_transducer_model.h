// The offline transducer family ("transducer_offline", docs/model_contract.md): NeMo's
// Conformer/FastConformer transducers (RNN-T and TDT). An offline encoder over whole segments as
// the ctc_offline family runs it (stream/offline_segments.h: NeMo's front end, segments of up to
// voxrt.offline.max_frames hops, one encoder call for the segments of every stream in the batch),
// then greedy search (decode/stateful_transducer_search.h; RNN-T and TDT) or modified beam search
// (decode/stateful_transducer_beam.h; RNN-T) with the LSTM prediction network's state per
// hypothesis, batched across the streams of the batch.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "decode/vocabulary.h"
#include "stream/bundle_manifest.h"
#include "stream/model_family.h"
#include "stream/offline_segments.h"
#include "stream/transducer/lstm_transducer_networks.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

template <class Search>
class OfflineTransducerStream;

class OfflineTransducerModel final : public ModelFamily,
                                     public std::enable_shared_from_this<OfflineTransducerModel> {
 public:
  static Expected<std::shared_ptr<OfflineTransducerModel>> create(const BundleManifest& manifest,
                                                                  const std::string& folder,
                                                                  const RecognizerConfig& config);

  std::string_view name() const override { return "transducer_offline"; }
  const audio::FeatureConfig& feature_config() const override {
    return segments_->feature_config();
  }
  const ChunkLayout& chunk_layout() const override { return segments_->layout(); }
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return vocabulary_->size(); }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int streams_open() const override { return streams_open_.load(); }
  int max_batch() const override { return max_batch_; }
  bool hotwords_need_beam_search() const override { return true; }
  bool has_lm() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

  const LstmTransducerNetworks& networks() const { return *networks_; }

 private:
  template <class Search>
  friend class OfflineTransducerStream;
  OfflineTransducerModel() = default;

  std::shared_ptr<const Engine> encoder_;
  std::unique_ptr<ExecutionContext> encoder_context_;
  std::unique_ptr<LstmTransducerNetworks> networks_;
  std::optional<OfflineSegmentFrontEnd> segments_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  int features_input_ = 0;
  int length_input_ = 1;
  int output_ = 0;
  // The recognizer's max_symbols_per_frame, or for 0 the bundle's
  // voxrt.transducer.max_symbols_per_frame (NeMo's greedy max_symbols, 10).
  int max_symbols_ = 10;
  int max_streams_ = 0;
  int max_batch_ = 1;
  std::atomic<int> streams_open_{0};
};

}  // namespace voxrt::stream
