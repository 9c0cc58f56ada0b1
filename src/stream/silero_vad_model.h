// Silero VAD v5 run by voxrt's engine, batched across streams.
//
// The engine comes from `voxrt build --onnx silero_vad_v5.onnx --fixed-input sr=16000 --profile
// input:1x576/8x576/32x576 --profile state:2x1x128/2x8x128/2x32x128` (or `voxrt transcribe --vad
// silero --vad-model silero_vad_v5.onnx`, which builds that once into a cache). The model's state
// is [2, batch, 128] (batch in dim 1), which the runtime's StatePool (batch-first states) does not
// hold, so each stream keeps its 256 state values itself and run() gathers them into one batch
// and scatters the new states back; a stream's probabilities do not depend on its batch.
#pragma once

#include <memory>
#include <span>
#include <string>

#include "voxrt/engine.h"

namespace voxrt::stream {

class SileroVadModel {
 public:
  static constexpr int kStateValues = 2 * 128;

  static Expected<std::shared_ptr<SileroVadModel>> load(const std::string& engine_path,
                                                        int threads = 1);
  static Expected<std::shared_ptr<SileroVadModel>> create(std::shared_ptr<const Engine> engine,
                                                          int threads = 1);

  // Samples per row of `input` (context + window), and the largest batch the engine takes.
  int input_samples() const { return input_samples_; }
  int max_batch() const { return max_batch_; }

  // windows[b]: input_samples() values; states[b]: kStateValues values, updated in place;
  // probabilities[b] receives the speech probability. Rows are independent.
  Status run(std::span<const float* const> windows, std::span<float* const> states,
             std::span<float> probabilities);

  long long engine_calls() const { return engine_calls_; }
  long long windows_run() const { return windows_run_; }

 private:
  SileroVadModel() = default;

  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  int input_index_ = -1, state_index_ = -1, sr_index_ = -1;
  int output_index_ = -1, state_out_index_ = -1;
  int input_samples_ = 0;
  int max_batch_ = 1;
  long long engine_calls_ = 0;
  long long windows_run_ = 0;
};

}  // namespace voxrt::stream
