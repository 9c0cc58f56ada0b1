// The CUDA executable (per engine: device weights, one prepared kernel per node) and session
// (per execution context: stream, cuBLASLt handle, arena, pinned staging, CUDA graphs).
#pragma once

#include <memory>

#include "backends/cuda/cuda_common.h"
#include "backends/device_backend.h"

namespace voxrt::backends::cuda {

// `graph` must outlive the result; every node's voxrt.tactic is used (tactic 1 when absent,
// tactic 0 when the node has only one). With `profiles` (the engine's), shapes that fit profile
// p > 0 run the tactics recorded for p (runtime::recorded_tactic) where they differ.
// `stack_recurrent`: chains of GRU layers that cuDNN can run as one multi-layer call run so
// (at load, as the build chose or VOXRT_CUDA_RNN_STACK says; off while tactics are timed node
// by node).
Expected<std::unique_ptr<DeviceExecutable>> compile_graph(
    const ir::Graph& graph, Precision precision, std::vector<OptimizationProfile> profiles = {},
    bool stack_recurrent = false);

}  // namespace voxrt::backends::cuda
