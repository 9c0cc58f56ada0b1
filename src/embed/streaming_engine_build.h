// Building a streaming model's engine from an embedding program (the C API and the Python
// package): the optimization profiles come from the model's own contract (docs/model_contract.md)
// instead of `voxrt build --profile` flags, so a caller needs only the ONNX file.
#pragma once

#include <string>

#include "voxrt/builder.h"

namespace voxrt::embed {

struct StreamingBuildOptions {
  // Kernel threads while timing tactics (use the threads the recognizer will run with).
  int threads = 1;
  // Time candidate kernels; false takes each layer's first tactic (seconds instead of minutes).
  bool autotune = true;
  // Empty: no cache file.
  std::string timing_cache_path;
  // The largest batch of streams the second profile admits (a Recognizer's max_batch).
  int max_batch = 64;

  Status validate() const;
};

// The two profiles scripts/run-default.sh gives the default model, derived from the model's
// metadata (voxrt.chunk_frames, voxrt.subsampling, voxrt.feature.num_bins, voxrt.state_pairs):
// one stream alone (its kernels timed at batch 1) and batches of up to max_batch streams.
// `features_input` is the model's one input that is not a state.
Expected<std::vector<OptimizationProfile>> streaming_profiles(
    const std::map<std::string, std::string>& metadata, const std::string& features_input,
    int max_batch);

// Imports `onnx_path`, builds a CPU engine with streaming_profiles and writes it to
// `engine_path` (replacing it).
Status build_streaming_engine(const std::string& onnx_path, const std::string& engine_path,
                              const StreamingBuildOptions& options);

}  // namespace voxrt::embed
