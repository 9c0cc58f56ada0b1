// The transducer family (RNN-T, docs/model_contract.md "transducer"): a streaming encoder whose
// caches live in its engine's state slot pool, a stateless prediction network (the last
// context_size units) and a joint network, each an engine of the bundle. A batch of streams
// runs one encoder call per chunk, then the search (decode/transducer_search.h) runs one joiner
// call per encoder frame and one decoder call per step for the hypotheses that emitted, over
// every stream of the batch at once.
#pragma once

#include <memory>
#include <string>

#include "decode/transducer_search.h"
#include "runtime/state_pool.h"
#include "stream/transducer/transducer_family.h"

namespace voxrt::stream {

// The decoder and joiner engines as the search's batched networks.
class EngineTransducerNetworks final : public decode::TransducerNetworks {
 public:
  static Expected<std::unique_ptr<EngineTransducerNetworks>> create(
      std::shared_ptr<const Engine> decoder, std::shared_ptr<const Engine> joiner,
      const std::map<std::string, std::string>& metadata, int blank_id, int threads,
      const std::string& where);

  int context_size() const override { return context_size_; }
  int vocab_size() const override { return vocab_size_; }
  int blank_id() const override { return blank_id_; }
  int decoder_dim() const override { return decoder_dim_; }
  int encoder_dim() const override { return encoder_dim_; }
  Status run_decoder(std::span<const std::int64_t> contexts, int rows,
                     std::vector<float>& decoder_out) override;
  Status run_joiner(std::span<const float> encoder_frames, std::span<const float> decoder_out,
                    int rows, std::vector<float>& logits) override;
  long long decoder_calls() const { return decoder_calls_; }
  long long joiner_calls() const { return joiner_calls_; }

 private:
  EngineTransducerNetworks() = default;

  std::shared_ptr<const Engine> decoder_;
  std::shared_ptr<const Engine> joiner_;
  std::unique_ptr<ExecutionContext> decoder_context_;
  std::unique_ptr<ExecutionContext> joiner_context_;
  // The joiner's inputs in engine order: true where the encoder frame goes.
  bool joiner_encoder_first_ = true;
  int context_size_ = 0;
  int vocab_size_ = 0;
  int blank_id_ = 0;
  int decoder_dim_ = 0;
  int encoder_dim_ = 0;
  // Rows per engine call (the engines' largest profile batch); more rows run in pieces.
  std::int64_t decoder_max_rows_ = 0;
  std::int64_t joiner_max_rows_ = 0;
  long long decoder_calls_ = 0;
  long long joiner_calls_ = 0;
};

class TransducerModel final : public TransducerFamily,
                              public std::enable_shared_from_this<TransducerModel> {
 public:
  static Expected<std::shared_ptr<TransducerModel>> create(const BundleManifest& manifest,
                                                           const std::string& folder,
                                                           const RecognizerConfig& config);

  std::string_view name() const override { return "transducer"; }
  const audio::FeatureConfig& feature_config() const override { return front_end_.features; }
  const ChunkLayout& chunk_layout() const override { return front_end_.layout; }
  int streams_open() const override { return pool_->in_use(); }
  bool hotwords_need_beam_search() const override { return false; }
  Expected<std::unique_ptr<FamilyStream>> open_stream(const StreamOptions& options,
                                                      const ResolvedDecoding& decoding) override;
  Status run_batch(std::span<const ChunkInput> batch, int frames) override;

  const EngineTransducerNetworks& networks() const { return *networks_; }
  // Wall time of run_batch's two halves since creation (benchmarks, metrics).
  struct Timings {
    double encoder_seconds = 0;
    double search_seconds = 0;
    long long batches = 0;
  };
  const Timings& timings() const { return timings_; }

 private:
  TransducerModel() = default;

  std::unique_ptr<StatePool> pool_;
  std::unique_ptr<EngineTransducerNetworks> networks_;
  StreamingFrontEnd front_end_;
  // Encoder inputs besides the states: the features, and optionally the frames each stream has
  // processed (icefall's streaming Conformer: processed_lens), by position in the pool's order.
  int features_input_ = 0;
  int processed_frames_input_ = -1;
  int encoder_output_ = 0;
  Timings timings_;
};

}  // namespace voxrt::stream
