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
// which layers run reduced. Layers the INT8 step marked int8 keep it. Notes what it did in
// `notes`. Nothing to do for an fp32 engine without fp16 or int8 layers.
void settle_cpu_layer_precisions(ir::Graph& graph, Precision engine_precision,
                                 std::vector<std::string>& notes);

// Device (CUDA) int8 engines, after the INT8 step: every layer the step did not mark int8 and
// that has no precision of its own is set to fp16, the precision it runs at there, so the engine
// records each layer's precision and `voxrt inspect` shows it. Notes the counts in `notes`.
void settle_device_int8_layer_precisions(ir::Graph& graph, Precision engine_precision,
                                         std::vector<std::string>& notes);

// Device int8 engines, after tactic selection: a layer marked int8 whose chosen tactics (at
// every profile) are none of the backend's INT8 ones (names ending in _int8), because its fp16
// tactic timed faster, is recorded fp16 and loses its int8 marks (with a note).
void record_tuned_device_int8_precisions(ir::Graph& graph, std::vector<std::string>& notes);

// CPU engines, after tactic selection: a layer marked fp16 or int8 whose chosen tactics (at every
// profile) all keep FP32 weights, because they were faster, is recorded as fp32 (with a note).
// A layer keeps fp16 while one profile runs an FP16 tactic; `inspect` lists per-profile tactics,
// whose names end in _fp16 where the weights are FP16.
void record_tuned_cpu_precisions(ir::Graph& graph, std::vector<std::string>& notes);

}  // namespace voxrt::builder
