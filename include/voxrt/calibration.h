// INT8 calibration at build time (`voxrt build --precision int8 --calibration-data DIR`): where
// the data comes from, which calibrator turns the activation histograms into ranges, and the
// cache that lets a rebuild skip all of it. src/builder/calibration/ holds the implementation.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt {

// How a tensor's histogram becomes its INT8 range (TensorRT's calibrators):
//  kEntropy: the clipping threshold whose quantized distribution is closest (KL divergence) to
//            the observed one; robust to rare outliers;
//  kMinMax: the observed minimum and maximum (no clipping);
//  kPercentile: the values that leave `percentile` % of the mass inside.
enum class Calibrator : std::uint8_t { kEntropy = 0, kMinMax = 1, kPercentile = 2 };

std::string_view calibrator_name(Calibrator calibrator);
Expected<Calibrator> calibrator_from_name(std::string_view name);

// What a calibration source learns about the model before it produces data.
struct CalibrationModelInfo {
  // The model's metadata (voxrt.feature.*, voxrt.chunk_frames, ...: docs/model_contract.md).
  std::map<std::string, std::string> metadata;
  struct Input {
    std::string name;
    DType dtype = DType::kF32;
    Dims dims;  // -1 where the dim is not fixed
    // A streaming state: a source need not give it (the builder carries it from one run of a
    // stream to the next, starting from zeros).
    bool state = false;
  };
  // Every graph input, in graph order.
  std::vector<Input> inputs;
};

// One run of the model: a value for every input of CalibrationModelInfo::inputs that is not a
// state (and for states, where a source has them), by name.
using CalibrationChunk = std::map<std::string, Tensor>;

// Calibration data: streams of consecutive runs. A speech model's source runs each recording
// through the model's own front end and cuts it into chunks as a live stream does, so the
// activations (and the streaming states they depend on) are those the engine will see.
class CalibrationSource {
 public:
  virtual ~CalibrationSource() = default;
  // Called once, before anything else, with the model being built.
  virtual Status prepare(const CalibrationModelInfo& model) = 0;
  // "12 audio files in DIR through the model's fbank front end, 32-frame chunks".
  virtual std::string describe() const = 0;
  // Changes when the data or the way it becomes inputs changes (file names and sizes, the front
  // end): the calibration cache is recomputed when it differs.
  virtual std::string fingerprint() const = 0;
  virtual int stream_count() const = 0;
  // The runs of stream `index` (0 <= index < stream_count()), in order.
  virtual Expected<std::vector<CalibrationChunk>> stream(int index) = 0;
};

// DIR of test_data_set_N/input_K.pb folders (the layout `voxrt check` reads), each one run of
// its own: for models of any kind.
Expected<std::shared_ptr<CalibrationSource>> make_tensor_set_calibration_source(
    const std::string& dir);
// DIR (recursively) of audio files (.wav, .flac, ...): for speech models whose metadata names
// their front end (voxrt.feature.*) and chunk (voxrt.chunk_frames); the one input that is not a
// state gets the features.
Expected<std::shared_ptr<CalibrationSource>> make_audio_calibration_source(const std::string& dir);
// Whichever of the two `dir` holds (test_data_set_* folders, else audio files).
Expected<std::shared_ptr<CalibrationSource>> make_calibration_source(const std::string& dir);

struct Int8Config {
  // Null: the calibration cache must hold the ranges (a rebuild without the data).
  std::shared_ptr<CalibrationSource> data;
  Calibrator calibrator = Calibrator::kEntropy;
  // kPercentile's mass kept inside the range, in percent.
  double percentile = 99.99;
  // Empty: no cache file. Otherwise read when it matches the model, front end, calibrator and
  // data; written after a calibration.
  std::string cache_path;
  // Layers kept in fp32 without measuring: the final projection (a dense layer whose result
  // reaches a graph output through no other dense or recurrent layer), which sets every output
  // logit directly.
  bool keep_final_projection_fp32 = true;
  // Mixed precision by measurement: after calibration each quantizable layer is quantized alone
  // and the relative error it causes in the model's outputs measured on the calibration data;
  // then, most sensitive first, layers go back to fp32 until the error of the whole INT8 model
  // is at most this (0: no automatic fallback; the sensitivities are still measured).
  double max_output_error = 0.0;
  // Calibration streams the sensitivity measurements use (the first ones; 0: none measured).
  int sensitivity_streams = 8;
};

// One quantizable layer's result of calibration (BuildReport::int8_layers).
struct Int8LayerReport {
  std::string node;
  std::string op;
  bool int8 = false;   // false: kept in higher precision
  std::string reason;  // why it is where it is ("calibrated", "final projection", ...)
  float input_min = 0, input_max = 0;  // observed range of its activation input
  float input_scale = 0;               // chosen quantization of that input
  int input_zero_point = 0;
  // Relative L2 error of the model's outputs with only this layer in INT8 (-1: not measured).
  double output_error = -1;
  // Share of output frames whose arg-max changed with only this layer in INT8 (-1: not measured).
  double argmax_changed = -1;
};

}  // namespace voxrt
