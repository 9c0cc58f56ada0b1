#include "stream/transducer/transducer_family.h"

#include <algorithm>

#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"

namespace voxrt::stream {

DeviceKind TransducerFamily::device() const {
  return encoder_->impl().contents.target.device;
}

Expected<TransducerFamily::PredictionEngines> TransducerFamily::load_bundle(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  where_ = folder + "/" + BundleManifest::kFileName;
  if (!config.lm_path.empty()) {
    return unsupported(where_, ": an LM (", config.lm_path, ") is not supported with ",
                       manifest.family, " models (CTC beam search only)");
  }
  metadata_ = manifest.metadata;
  const std::string vocabulary_dir = config.model_dir.empty() ? folder : config.model_dir;
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary,
                         decode::Vocabulary::from_metadata(metadata_, vocabulary_dir));
  vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));

  VOXRT_ASSIGN_OR_RETURN(encoder_path_, manifest.engine_path(folder, "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_path, manifest.engine_path(folder, "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_path, manifest.engine_path(folder, "joiner"));
  PredictionEngines prediction;
  VOXRT_ASSIGN_OR_RETURN(encoder_, Engine::load_file(encoder_path_));
  VOXRT_ASSIGN_OR_RETURN(prediction.decoder, Engine::load_file(decoder_path));
  VOXRT_ASSIGN_OR_RETURN(prediction.joiner, Engine::load_file(joiner_path));
  const DeviceKind encoder_device = device();
  if (prediction.decoder->impl().contents.target.device != encoder_device ||
      prediction.joiner->impl().contents.target.device != encoder_device) {
    return invalid_argument(where_,
                            ": the encoder, decoder and joiner engines were built for "
                            "different devices; rebuild the bundle with one --device");
  }
  VOXRT_ASSIGN_OR_RETURN(encoder_context_, encoder_->create_context(config.threads));
  return prediction;
}

Status TransducerFamily::load_time_base(int subsampling, double frame_shift_ms) {
  VOXRT_ASSIGN_OR_RETURN(time_base_,
                         time_base_from_metadata(metadata_, subsampling, frame_shift_ms, where_));
  return Status::ok();
}

Expected<StreamingFrontEnd> TransducerFamily::load_streaming_front_end() {
  StreamingFrontEnd front_end;
  VOXRT_ASSIGN_OR_RETURN(front_end.features, audio::FeatureConfig::from_metadata(metadata_));
  front_end.feature_dim = front_end.features.output_dim();
  VOXRT_ASSIGN_OR_RETURN(front_end.layout,
                         whole_chunk_layout(metadata_, front_end.features, where_));
  VOXRT_RETURN_IF_ERROR(
      load_time_base(front_end.layout.subsampling, front_end.features.frame_shift_ms));
  return front_end;
}

Status TransducerFamily::resolve_batch(const std::string& features_input,
                                       const RecognizerConfig& config) {
  VOXRT_ASSIGN_OR_RETURN(max_batch_,
                         resolve_max_batch(*encoder_, features_input, config.max_batch,
                                           RecognizerConfig::kDefaultMaxBatch, encoder_path_));
  return Status::ok();
}

Expected<std::shared_ptr<const decode::ContextGraph>> TransducerFamily::hotword_graph(
    const StreamOptions& options, const ResolvedDecoding& decoding) const {
  if (options.hotwords.empty()) return std::shared_ptr<const decode::ContextGraph>();
  VOXRT_ASSIGN_OR_RETURN(auto graph, decode::ContextGraph::from_phrases(
                                         *vocabulary_, options.hotwords, decoding.hotword_bonus));
  return std::make_shared<const decode::ContextGraph>(std::move(graph));
}

Expected<ChunkLayout> whole_chunk_layout(const std::map<std::string, std::string>& metadata,
                                         const audio::FeatureConfig& features,
                                         const std::string& where) {
  ChunkLayout layout;
  VOXRT_ASSIGN_OR_RETURN(layout.chunk_frames,
                         metadata_int(metadata, "voxrt.chunk_frames", 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(layout.shift_frames,
                         metadata_int(metadata, "voxrt.shift_frames", 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(layout.subsampling,
                         metadata_int(metadata, "voxrt.subsampling", 0, true, where));
  if (layout.shift_frames > layout.chunk_frames || layout.shift_frames % layout.subsampling != 0) {
    return invalid_argument(where, ": voxrt.shift_frames ", layout.shift_frames,
                            " must be at most voxrt.chunk_frames ", layout.chunk_frames,
                            " and a multiple of voxrt.subsampling ", layout.subsampling);
  }
  layout.min_chunk_frames = layout.chunk_frames;
  VOXRT_ASSIGN_OR_RETURN(layout.pad_frame, chunk_pad_frame(metadata, features, where));
  return layout;
}

Tensor batch_features(std::span<const ChunkInput> batch, int frames, int feature_dim) {
  Tensor features = Tensor::uninitialized(
      DType::kF32, {static_cast<std::int64_t>(batch.size()), frames, feature_dim});
  const std::size_t chunk_values = static_cast<std::size_t>(frames) * feature_dim;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    std::copy(batch[b].features, batch[b].features + chunk_values,
              features.data<float>() + b * chunk_values);
  }
  return features;
}

Expected<int> max_symbols_per_frame(const std::map<std::string, std::string>& metadata,
                                    int fallback, const RecognizerConfig& config,
                                    const std::string& where) {
  VOXRT_ASSIGN_OR_RETURN(
      int symbols,
      metadata_int(metadata, "voxrt.transducer.max_symbols_per_frame", fallback, false, where));
  if (symbols < 1 || symbols > 16) {
    return invalid_argument(where, ": voxrt.transducer.max_symbols_per_frame must be 1..16, found ",
                            symbols);
  }
  return config.transducer.max_symbols_per_frame > 0 ? config.transducer.max_symbols_per_frame
                                                     : symbols;
}

}  // namespace voxrt::stream
