// What the three transducer families (transducer, transducer_stateful, transducer_offline,
// docs/model_contract.md) share: a bundle of encoder, decoder and joiner engines built for one
// device, the bundle's metadata, vocabulary and time base, the encoder's batch limit, hotwords
// through a context graph, and no LM. Each family adds its encoder's inputs, its prediction
// network and its searches.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "decode/context_graph.h"
#include "decode/vocabulary.h"
#include "stream/bundle_manifest.h"
#include "stream/model_family.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

// A streaming encoder's input: its features and how the driver cuts them into chunks.
struct StreamingFrontEnd {
  audio::FeatureConfig features;
  ChunkLayout layout;
  int feature_dim = 0;
};

class TransducerFamily : public ModelFamily {
 public:
  const decode::TimeBase& time_base() const override { return time_base_; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  int vocab_size() const override { return vocabulary_->size(); }
  const decode::Vocabulary& vocabulary() const override { return *vocabulary_; }
  DeviceKind device() const override;
  int max_batch() const override { return max_batch_; }
  bool has_lm() const override { return false; }

 protected:
  // The prediction network's engines, which each family wraps its own way.
  struct PredictionEngines {
    std::shared_ptr<const Engine> decoder;
    std::shared_ptr<const Engine> joiner;
  };

  // Refuses an LM; loads the bundle's metadata, its vocabulary (file names relative to
  // config.model_dir, else the bundle folder), the encoder with an execution context, and the
  // decoder and joiner, all three built for one device. Sets where_ and encoder_path_.
  Expected<PredictionEngines> load_bundle(const BundleManifest& manifest, const std::string& folder,
                                          const RecognizerConfig& config);
  // The time base of output frames of `subsampling` feature frames of `frame_shift_ms`.
  Status load_time_base(int subsampling, double frame_shift_ms);
  // A streaming encoder's front end from the metadata (features, whole_chunk_layout), and the
  // time base of its output frames.
  Expected<StreamingFrontEnd> load_streaming_front_end();
  // max_batch_ from the config and what the encoder's profiles admit for `features_input`.
  Status resolve_batch(const std::string& features_input, const RecognizerConfig& config);
  // The context graph of a stream's hotwords (already normalised to the units), or null.
  Expected<std::shared_ptr<const decode::ContextGraph>> hotword_graph(
      const StreamOptions& options, const ResolvedDecoding& decoding) const;

  std::string where_;         // the bundle's manifest, for errors about its keys
  std::string encoder_path_;  // for errors about the encoder's inputs and outputs
  std::shared_ptr<const Engine> encoder_;
  std::unique_ptr<ExecutionContext> encoder_context_;
  decode::TimeBase time_base_;
  std::map<std::string, std::string> metadata_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  int max_batch_ = 1;
};

// A streaming encoder's layout (voxrt.chunk_frames, voxrt.shift_frames, voxrt.subsampling): it
// takes whole chunks only (their length is fixed at export), a last chunk padded with
// voxrt.chunk_pad's frame of `features`.
Expected<ChunkLayout> whole_chunk_layout(const std::map<std::string, std::string>& metadata,
                                         const audio::FeatureConfig& features,
                                         const std::string& where);

// A streaming encoder's features input for `batch`: [streams, frames, feature_dim], each
// stream's chunk in batch order.
Tensor batch_features(std::span<const ChunkInput> batch, int frames, int feature_dim);

// Units a greedy search may emit per encoder frame: the recognizer's max_symbols_per_frame, or
// for 0 the bundle's voxrt.transducer.max_symbols_per_frame (1..16; `fallback` when absent).
Expected<int> max_symbols_per_frame(const std::map<std::string, std::string>& metadata,
                                    int fallback, const RecognizerConfig& config,
                                    const std::string& where);

}  // namespace voxrt::stream
