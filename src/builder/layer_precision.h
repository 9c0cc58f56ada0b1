// BuilderConfig::layer_precisions applied to the optimized graph: each named ONNX node's layer
// gets its precision as a node attribute (backends::kLayerPrecisionAttr), which the engine file
// keeps and the device backend reads when it picks tactics and prepares kernels.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/builder.h"

namespace voxrt::builder {

// The names of every node of `graph` (subgraphs included), taken before optimization so that a
// name folded away by the passes is told apart from one the model never had.
std::set<std::string> node_names(const ir::Graph& graph);

// Sets the attribute on every node made from a named ONNX node (by its name or its origin list;
// the most precise named precision wins). A name `original_names` lacks is an error naming it;
// one the passes folded away is a warning in `warnings`.
Status apply_layer_precisions(ir::Graph& graph, const BuilderConfig& config,
                              const std::set<std::string>& original_names,
                              std::vector<std::string>& warnings);

// CPU engines: gives every layer the precision it will really run at. A layer asked to run at
// fp16 (by the engine's precision or its own) keeps fp16 where the CPU backend has fp16 kernels
// for it (backends::cpu::supports_fp16) and is set to fp32 otherwise, so `voxrt inspect` tells
// which layers run reduced. Notes what it did in `notes`. Nothing to do for an fp32 engine
// without fp16 layers.
void settle_cpu_layer_precisions(ir::Graph& graph, Precision engine_precision,
                                 std::vector<std::string>& notes);

}  // namespace voxrt::builder
