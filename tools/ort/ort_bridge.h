// Reference outputs (and timings) from the real onnxruntime: onnxruntime-node from npm, CPU
// provider, run by node on tools/ort/ort_run.js. scripts/fetch-third-party.sh installs it into
// .third_party/. Used by `voxrt check`, the model tests and the CPU benchmark.
#pragma once

#include <string>
#include <vector>

#include "voxrt/tensor.h"

namespace voxrt::ort {

struct OrtRunOptions {
  int threads = 1;
  int timed_iterations = 0;  // > 0: also time that many runs after the first
};

struct OrtResult {
  std::vector<Tensor> outputs;
  std::vector<double> times_ms;  // sorted
  // CPU time of the onnxruntime process per timed run (all its threads), sorted.
  std::vector<double> cpu_times_ms;
};

// True when .third_party has onnxruntime-node and node is on PATH.
bool onnxruntime_available();

Expected<OrtResult> run_onnxruntime(const std::string& onnx_path,
                                    const std::vector<std::string>& input_names,
                                    const std::vector<Tensor>& inputs,
                                    const std::vector<std::string>& output_names,
                                    const OrtRunOptions& options = {});

}  // namespace voxrt::ort
