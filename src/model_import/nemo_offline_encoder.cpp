#include "model_import/nemo_offline_encoder.h"

#include <algorithm>

#include "model_import/import_support.h"

namespace voxrt::model_import {
namespace {

// Hops (10 ms) per segment: NeMo's offline models are trained on utterances up to ~20-30 s.
constexpr int kMaxSegmentHops = 3000;

}  // namespace

std::map<std::string, std::string> nemo_offline_contract(const audio::NemoFeatureConfig& front_end,
                                                         int subsampling, const std::string& family,
                                                         const std::string& output) {
  std::map<std::string, std::string> m = front_end.to_metadata();
  m["voxrt.model_family"] = family;
  m["voxrt.subsampling"] = std::to_string(subsampling);
  m["voxrt.offline.max_frames"] = std::to_string(kMaxSegmentHops);
  m["voxrt.offline.features_input"] = kNemoFeaturesInput;
  m["voxrt.offline.length_input"] = kNemoLengthInput;
  m["voxrt.offline.output"] = output;
  return m;
}

Status build_nemo_offline_encoder(std::unique_ptr<ir::Graph> graph, int n_mels,
                                  const std::string& source_file,
                                  const audio::NemoFeatureConfig& front_end,
                                  const std::string& engine_file,
                                  const ModelDirImportOptions& options) {
  BuilderConfig config = options.build;
  config.states.clear();
  const std::int64_t opt_rows = std::min(options.max_batch, 4);
  const std::int64_t max_frames =
      front_end.frames_for(static_cast<std::int64_t>(kMaxSegmentHops) * front_end.hop_samples()) +
      front_end.pad_to;
  const std::int64_t opt_frames = std::min<std::int64_t>(max_frames, 500);
  config.profiles = {OptimizationProfile{
      "utterances",
      {{kNemoFeaturesInput, ShapeRange{{1, n_mels, 1},
                                       {opt_rows, n_mels, opt_frames},
                                       {options.max_batch, n_mels, max_frames}}},
       {kNemoLengthInput, ShapeRange{{1}, {opt_rows}, {options.max_batch}}}}}};
  config.profiling_values[kNemoLengthInput] = Tensor::from_vector<std::int64_t>(
      {opt_rows}, std::vector<std::int64_t>(static_cast<std::size_t>(opt_rows), opt_frames));
  return build_bundle_engine(std::move(graph), source_file, config, options.bundle_dir, engine_file,
                             options);
}

Expected<audio::NemoFeatureConfig> sherpa_nemo_front_end(int n_mels,
                                                         const std::string& normalize_type) {
  audio::NemoFeatureConfig front_end;
  front_end.window_size_s = 0.025;
  front_end.n_fft = 512;
  front_end.n_mels = n_mels;
  VOXRT_ASSIGN_OR_RETURN(front_end.normalize, audio::nemo_normalize_from_name(normalize_type));
  return front_end;
}

}  // namespace voxrt::model_import
