#include "embed/streaming_engine_build.h"

#include <charconv>
#include <fstream>
#include <set>
#include <sstream>

#include "onnx_import/importer.h"

namespace voxrt::embed {
namespace {

Expected<std::int64_t> positive_metadata(const std::map<std::string, std::string>& metadata,
                                         const std::string& key, std::int64_t fallback) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    if (fallback > 0) return fallback;
    return invalid_argument("model metadata: '", key,
                            "' is missing; a streaming model declares it (docs/model_contract.md)");
  }
  std::int64_t value = 0;
  const std::string& text = it->second;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 1) {
    return invalid_argument("model metadata: '", key, "' must be a positive integer, found '", text,
                            "'");
  }
  return value;
}

std::set<std::string> state_inputs(const std::map<std::string, std::string>& metadata) {
  std::set<std::string> inputs;
  auto it = metadata.find("voxrt.state_pairs");
  if (it == metadata.end()) return inputs;
  std::stringstream list(it->second);
  for (std::string pair; std::getline(list, pair, ',');) {
    inputs.insert(pair.substr(0, pair.find(':')));
  }
  return inputs;
}

}  // namespace

Status StreamingBuildOptions::validate() const {
  if (threads < 1) return invalid_argument("build: threads must be >= 1, got ", threads);
  if (max_batch < 2) return invalid_argument("build: max_batch must be >= 2, got ", max_batch);
  return Status::ok();
}

Expected<std::vector<OptimizationProfile>> streaming_profiles(
    const std::map<std::string, std::string>& metadata, const std::string& features_input,
    int max_batch) {
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t chunk_frames,
                         positive_metadata(metadata, "voxrt.chunk_frames", 0));
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t subsampling,
                         positive_metadata(metadata, "voxrt.subsampling", 1));
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t bins,
                         positive_metadata(metadata, "voxrt.feature.num_bins", 0));
  if (max_batch < 2) return invalid_argument("streaming profiles: max_batch must be >= 2");
  const std::int64_t batch = max_batch;
  const std::int64_t batch_opt = std::min<std::int64_t>(8, batch);
  // The shortest chunk is one output frame's worth (a stream's last, padded chunk).
  OptimizationProfile one_stream{
      "one_stream",
      {{features_input,
        ShapeRange{{1, subsampling, bins}, {1, chunk_frames, bins}, {1, chunk_frames, bins}}}}};
  OptimizationProfile batched{"batched",
                              {{features_input, ShapeRange{{2, subsampling, bins},
                                                           {batch_opt, chunk_frames, bins},
                                                           {batch, chunk_frames, bins}}}}};
  return std::vector<OptimizationProfile>{one_stream, batched};
}

Status build_streaming_engine(const std::string& onnx_path, const std::string& engine_path,
                              const StreamingBuildOptions& options) {
  VOXRT_RETURN_IF_ERROR(options.validate());
  if (engine_path.empty()) return invalid_argument("build: the engine path is empty");
  VOXRT_ASSIGN_OR_RETURN(auto graph, onnx_import::import_model_file(onnx_path));
  const std::set<std::string> states = state_inputs(graph->metadata);
  std::vector<std::string> others;
  for (const ir::Value* input : graph->inputs) {
    if (!states.contains(input->name)) others.push_back(input->name);
  }
  if (others.size() != 1) {
    std::string names;
    for (const auto& name : others) names += (names.empty() ? "" : ", ") + name;
    return invalid_argument(onnx_path,
                            ": a streaming model has one input besides the states of "
                            "voxrt.state_pairs (the features), found ",
                            others.size(), " (", names, ")");
  }
  BuilderConfig config;
  VOXRT_ASSIGN_OR_RETURN(config.profiles,
                         streaming_profiles(graph->metadata, others[0], options.max_batch));
  config.threads = options.threads;
  config.autotune = options.autotune;
  config.timing_cache_path = options.timing_cache_path;
  graph.reset();
  VOXRT_ASSIGN_OR_RETURN(const std::string engine, build_engine_from_onnx_file(onnx_path, config));
  std::ofstream out(engine_path, std::ios::binary | std::ios::trunc);
  out.write(engine.data(), static_cast<std::streamsize>(engine.size()));
  out.close();
  if (!out) return io_error("build: cannot write the engine to ", engine_path);
  return Status::ok();
}

}  // namespace voxrt::embed
