// The CPU backend's INT8 kernels, for layers the builder marked int8 (their precision attribute,
// backends/layer_precision.h, plus the calibrated input quantization, int8_quantization.h).
// The family registries (dense_registry.cpp, recurrent_registry.cpp) ask int8_tactics_first()
// and forward the INT8 tactic ids here. As with fp16, int8 is allowed rather than imposed: the
// FP32 tactics stay candidates after the INT8 ones, and the builder records a layer fp32 when
// timing chose an FP32 kernel for it.
#pragma once

#include <memory>
#include <vector>

#include "backends/kernel.h"
#include "ir/graph.h"

namespace voxrt::backends::cpu::quantized {

// Dense family tactic ids (append only; 1..19 are the FP32 ones).
inline constexpr TacticId kDenseVnniInt8Tactic = 20;
inline constexpr TacticId kDenseOneDnnInt8Tactic = 21;
inline constexpr TacticId kDenseAmxInt8Tactic = 22;
inline constexpr TacticId kDenseAmxUnsplitInt8Tactic = 23;

// Whether the node is marked int8 and has its calibrated input quantization.
bool marked_int8(const ir::Node& node);
// Whether the layer could run in INT8 (the builder's candidates for calibration).
bool int8_candidate(const ir::Node& node);

// Dense layers (Gemm, MatMul, FusedMatMul with a constant 2-D B and a [N] bias; Conv and
// FusedConv with constant weights, group 1).
bool dense_int8_applies(const ir::Node& node);
// reference_int8 (id 0), amx_int8 and amx_unsplit_int8 (where AMX-INT8 runs), vnni_int8,
// onednn_int8, for a node
// marked int8.
std::vector<TacticInfo> dense_int8_tactics(const ir::Node& node);
bool is_dense_int8_tactic(TacticId tactic);
Expected<std::unique_ptr<Kernel>> make_dense_int8_tactic(const ir::Node& node, TacticId tactic);

// The kernels (dense_int8.cpp), over the GEMM of `kind` (int8_gemm_runner.h).
enum class Int8GemmKind;
Expected<std::unique_ptr<Kernel>> make_dense_int8_kernel(const ir::Node& node, Int8GemmKind kind);

}  // namespace voxrt::backends::cpu::quantized
