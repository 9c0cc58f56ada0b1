// Building from an IR graph directly (what build_engine_from_onnx_file does after import);
// used by tests and tools that make graphs without ONNX.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "voxrt/builder.h"

namespace voxrt::builder {

Expected<std::string> build_engine_from_graph(std::unique_ptr<ir::Graph> graph,
                                              std::uint64_t model_hash, const BuilderConfig& config,
                                              BuildReport* report = nullptr);

}  // namespace voxrt::builder
