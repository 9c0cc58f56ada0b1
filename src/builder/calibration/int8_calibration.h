// The builder's INT8 step (CPU engines): which layers run in INT8, their activations' ranges from
// calibration data (or the calibration cache), mixed precision by measurement, and the marks the
// kernels read (the layer precision attribute plus the input quantization, int8_quantization.h).
//
// A layer is a candidate when the engine's precision is int8 (or --layer-precision names it
// int8) and the CPU backend has INT8 kernels for it (dense layers with constant weights,
// GRU/LSTM/RNN). Everything else stays FP32: normalizations, residual adds and the other
// elementwise work never leave FP32 here, since only the weight-bearing layers are quantized.
// Of the candidates, the final projection stays FP32 by default; the others are measured one at
// a time (quantized alone, the relative error of the model's outputs on the first calibration
// streams) and, with Int8Config::max_output_error, the most sensitive go back to FP32 until the
// whole INT8 model is within the limit.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/builder.h"

namespace voxrt::builder::calibration {

// Which backend the INT8 layers run on: its layers with INT8 kernels (a subset of the CPU's
// candidates: calibration and the sensitivity runs execute on the CPU backend) and the
// precision a candidate kept out of INT8 runs at (fp32 on the CPU, fp16 on CUDA).
struct Int8Target {
  std::string backend = "CPU";
  std::function<bool(const ir::Node&)> has_int8_kernel;  // empty: the CPU's int8_candidate
  Precision fallback = Precision::kFp32;
  std::string kernels = "dense layers with constant weights and GRU/LSTM/RNN";  // for messages
};

// Does nothing for an engine without int8 layers. Adds notes to report.notes and one
// Int8LayerReport per candidate to report.int8_layers.
Status calibrate_int8_layers(ir::Graph& graph, std::uint64_t model_hash,
                             const BuilderConfig& config, BuildReport& report,
                             const Int8Target& target = {});

// After tactic selection (record_tuned_cpu_precisions, record_tuned_device_int8_precisions): a
// layer of report.int8_layers whose INT8 mark was dropped because its FP32 (CPU) or FP16 (CUDA)
// tactic timed faster is reported at that precision, with that reason.
void report_tuned_int8_layers(const ir::Graph& graph, BuildReport& report);

}  // namespace voxrt::builder::calibration
