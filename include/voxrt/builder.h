// Build time (STYLE.md 1): BuilderConfig + an ONNX model -> a serialized engine. The runtime
// never parses ONNX; it only loads what this produces.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "voxrt/calibration.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt {

enum class Precision : std::uint8_t { kFp32 = 0, kTf32 = 1, kFp16 = 2, kBf16 = 3, kInt8 = 4 };
enum class DeviceKind : std::uint8_t { kCpu = 0, kCuda = 1 };

std::string_view precision_name(Precision precision);
Expected<Precision> precision_from_name(std::string_view name);

struct ShapeRange {
  Dims min, opt, max;
};

// min/opt/max for each dynamic input; kernels are timed at opt.
struct OptimizationProfile {
  std::string name;
  std::map<std::string, ShapeRange> inputs;
};

// A streaming state: the graph input that receives a stream's state and the output that
// returns the next one. The runtime keeps these in its slot pool.
struct StatePair {
  std::string input;
  std::string output;
};

struct BuildProgress {
  std::string stage;  // "import", "optimize", "autotune", "serialize"
  int done = 0;
  int total = 0;
  std::string detail;
};

struct BuilderConfig {
  Precision precision = Precision::kFp32;
  // Per-layer precision overrides (trtexec's --layerPrecisions), keyed by ONNX node name: a layer
  // runs at the precision of the nodes it was made from that are named here (the most precise
  // one if several are, fp32 > tf32 > fp16/bf16 > int8), the others at `precision`. The usual use
  // is keeping a numerically touchy layer (a final projection, a normalization) in fp32 in an
  // fp16 or int8 engine. Every name must be a node of the model. The CPU backend takes fp32,
  // fp16 (recurrent weights) and int8 (calibrated dense and recurrent layers).
  std::map<std::string, Precision> layer_precisions;
  // precision int8 (or a layer named int8), CPU: calibration data, calibrator, cache and the
  // mixed-precision fallback (voxrt/calibration.h).
  Int8Config int8;
  DeviceKind device = DeviceKind::kCpu;
  std::vector<OptimizationProfile> profiles;
  std::vector<StatePair> states;
  // Inputs bound to constants at build time (e.g. Silero's sr=16000), so branches fold away.
  std::map<std::string, Tensor> fixed_inputs;
  // Values for inputs in the build's profiling run (TensorRT's shape-tensor values). Inputs not
  // named get random floats or integer 1s at the first profile's opt shapes, which is wrong for
  // integer inputs that decide shapes (a Reshape's shape, a Slice's starts): give those here.
  // The engine still takes them as runtime inputs.
  std::map<std::string, Tensor> profiling_values;
  std::uint64_t workspace_limit_bytes = 1ull << 30;
  int threads = 1;
  // Empty: no cache file. A cache makes a second build faster and gives the same plan.
  std::string timing_cache_path;
  // Time each candidate tactic; false takes the first (reference-last) tactic, for fast tests.
  bool autotune = true;
  int timing_iterations = 5;
  // Extra metadata written into the engine (on top of the model's metadata_props).
  std::map<std::string, std::string> metadata;
  std::function<void(const BuildProgress&)> on_progress;

  Status validate() const;
  std::string describe() const;
};

// One autotuning candidate of one layer: its time at the opt shapes (measured now or from the
// timing cache), or time_us < 0 when it could not run there; `chosen` marks the layer's pick.
struct TacticTiming {
  std::string node;
  std::string tactic;
  double time_us = -1;
  bool chosen = false;
  int profile = 0;  // the optimization profile whose opt shapes it was timed at
};

struct BuildReport {
  // Graph rewrites of the optimizer passes (what "N rewrites" counts).
  std::vector<std::string> pass_changes;
  // "warning: ..." lines (a profile never used, a layer not at the precision asked, a candidate
  // that could not run), and notes on the precision each layer runs at: not rewrites.
  std::vector<std::string> warnings;
  std::vector<std::string> notes;
  std::vector<std::string> unsupported_nodes;
  double build_seconds = 0;
  int tactics_timed = 0;
  int timing_cache_hits = 0;
  std::vector<TacticTiming> tactic_timings;  // every candidate of every tuned layer
  // int8 engines: every layer that could run in INT8, where it ended up and why.
  std::vector<Int8LayerReport> int8_layers;
};

// Imports, optimizes, autotunes and serializes. `report` may be null.
Expected<std::string> build_engine_from_onnx_file(const std::string& onnx_path,
                                                  const BuilderConfig& config,
                                                  BuildReport* report = nullptr);

}  // namespace voxrt
