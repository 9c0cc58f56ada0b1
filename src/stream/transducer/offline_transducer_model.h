// The offline transducer family ("transducer_offline", docs/model_contract.md): NeMo's
// Conformer/FastConformer transducers (RNN-T and TDT). An offline encoder over whole segments as
// the ctc_offline family runs it (stream/offline_segments.h: NeMo's front end, segments of up to
// voxrt.offline.max_frames hops, one encoder call for the segments of every stream in the batch),
// then greedy search (decode/stateful_transducer_search.h; RNN-T and TDT) or beam search
// (decode/stateful_transducer_beam.h: modified beam for RNN-T, decode/stateful_tdt_beam.h for
// TDT) with the LSTM prediction network's state per hypothesis, batched across the streams of
// the batch.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "stream/offline_segments.h"
#include "stream/transducer/lstm_transducer_networks.h"
#include "stream/transducer/transducer_family.h"

namespace voxrt::stream {

class OfflineTransducerModel final : public TransducerFamily,
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
  int streams_open() const override { return streams_open_.load(); }
  bool hotwords_need_beam_search() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

  const LstmTransducerNetworks& networks() const { return *networks_; }

 private:
  OfflineTransducerModel() = default;

  std::unique_ptr<LstmTransducerNetworks> networks_;
  std::optional<OfflineSegmentFrontEnd> segments_;
  int features_input_ = 0;
  int length_input_ = 1;
  int output_ = 0;
  // The recognizer's max_symbols_per_frame, or for 0 the bundle's
  // voxrt.transducer.max_symbols_per_frame (NeMo's greedy max_symbols, 10).
  int max_symbols_ = 10;
  int max_streams_ = 0;
  std::atomic<int> streams_open_{0};
};

}  // namespace voxrt::stream
