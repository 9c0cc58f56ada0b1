// `voxrt build --accuracy-data MANIFEST [--max-wer-increase 0.3]`: the gate a reduced-precision
// engine must pass before it is written. The same model is also built in FP32 (same profiles,
// states and autotuning), both engines decode the manifest through the model's own Recognizer
// (greedy, no VAD, the files as concurrent streams: stream/manifest_decoding.h), and the reduced
// engine is refused when its WER is more than the limit above the FP32 engine's. A refusal
// lists the quantized layers, most sensitive first (the output error each caused alone on the
// calibration data, BuildReport::int8_layers), and the ones it would keep in fp32.
#pragma once

#include <string>
#include <vector>

#include "stream/manifest_decoding.h"
#include "voxrt/builder.h"

namespace voxrt::cli {

struct AccuracyGateOptions {
  std::string manifest_path;
  // Absolute WER increase allowed, in percentage points (0.3: 10.0 % -> 10.3 % passes).
  double max_wer_increase_points = 0.3;
  int threads = 1;
};

struct AccuracyGateResult {
  stream::ManifestScore fp32;
  stream::ManifestScore reduced;
  double wer_increase_points() const { return 100 * (reduced.wer() - fp32.wer()); }
  bool passed = false;
  // Quantized layers, most sensitive first, with their measured errors ("/gru/GRU_4 (output
  // error 0.0019, arg-max changed 0.09 %)").
  std::vector<std::string> sensitivity;
  // The layers the gate would keep in fp32 (the most sensitive ones until half of the summed
  // single-layer error is covered), as --layer-precision arguments. Empty when it passed.
  std::vector<std::string> keep_fp32;
  std::string describe() const;
};

// `reduced_engine`: the engine just built from `onnx_path` with `config` (its report in
// `report`). Builds the FP32 reference, decodes the manifest with both and compares.
Expected<AccuracyGateResult> run_accuracy_gate(const std::string& onnx_path,
                                               const BuilderConfig& config,
                                               const std::string& reduced_engine,
                                               const BuildReport& report,
                                               const AccuracyGateOptions& options);

}  // namespace voxrt::cli
