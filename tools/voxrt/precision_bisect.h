// `voxrt debug precision`: which quantized layers cost accuracy, measured in words. The build's
// own sensitivity (BuildReport::int8_layers) is the output error each layer causes alone on the
// calibration data; that orders the layers but does not say how many must stay in FP32 for the
// word error rate. This bisects it: the FP32 engine and the all-INT8 engine decode the manifest;
// then engines that keep the k most sensitive layers in FP32 are built and decoded, k found by
// binary search (the fewest that bring the WER within the limit), and that set is thinned by
// giving each of its layers back to INT8 in turn while the limit still holds. Optionally each
// layer alone in INT8 (all others FP32) is measured too: its own cost in words.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "stream/manifest_decoding.h"
#include "voxrt/builder.h"

namespace voxrt::cli {

struct PrecisionBisectOptions {
  std::string manifest_path;
  // The WER increase over FP32 allowed, in absolute percentage points.
  double max_wer_increase_points = 0.3;
  int threads = 1;
  // Also measure each quantized layer alone in INT8 (one build and decode per layer).
  bool each_layer = false;
  // Progress lines ("probe 3: 9 layers int8: building").
  std::function<void(const std::string&)> on_step;
};

// One measured engine: which of the quantized layers it kept in FP32, and its words.
struct PrecisionProbe {
  std::string label;                     // "all int8", "keep 3 most sensitive", ...
  std::vector<std::string> fp32_layers;  // the quantizable layers this engine keeps in FP32
  int int8_layer_count = 0;
  stream::ManifestScore score;
  double wer_increase_points = 0;
  bool passed = false;
};

struct PrecisionBisectResult {
  stream::ManifestScore fp32;
  // The layers the all-INT8 build quantized, most sensitive first (output error alone).
  std::vector<Int8LayerReport> layers;
  std::vector<PrecisionProbe> probes;      // in the order they were measured
  std::vector<PrecisionProbe> each_layer;  // with each_layer: one per layer, in `layers` order
  // The smallest set found to keep in FP32 and the engine that keeps it (within the limit).
  std::vector<std::string> keep_fp32;
  PrecisionProbe chosen;
  std::string chosen_engine;
};

// `config`: an INT8 build (precision int8, calibration data or cache); its own layer precisions
// stay as given. Errors: the manifest, a build or a decode that fails.
Expected<PrecisionBisectResult> bisect_precision(const std::string& onnx_path,
                                                 const BuilderConfig& config,
                                                 const PrecisionBisectOptions& options);

}  // namespace voxrt::cli
