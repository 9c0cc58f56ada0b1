// Output dtypes and shapes of a node from what is known of its inputs. The same functions run
// at build time (symbolic dims, constants known) and at run time (every dim known, and `data`
// set for every input), so build-time plans and run-time shapes cannot disagree.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "ir/graph.h"

namespace voxrt::ir {

struct ValueInfo {
  // False for an omitted optional input.
  bool present = true;
  DType dtype = DType::kF32;
  SymShape shape;
  bool rank_known = true;
  // The contents, when known (constants at build time; every input at run time).
  const Tensor* data = nullptr;
};

struct InferredOutput {
  DType dtype = DType::kF32;
  SymShape shape;
  bool rank_known = true;
  // Contents, when an op can compute them cheaply from known inputs (Shape of a known shape,
  // arithmetic on small i64 shape tensors). Constant folding uses these.
  std::optional<Tensor> data;
};

// Fills `outputs` (one entry per node output). Errors name the node and say what was expected.
Status infer_outputs(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs);

// Infers every node of `graph` in topological order and writes dtypes/shapes into its Values.
Status infer_graph(Graph& graph);

// One function per op family; infer_outputs dispatches on op_family(node.op).
Status infer_elementwise(const Node& node, std::span<const ValueInfo> inputs,
                         std::vector<InferredOutput>& outputs);
Status infer_reduction(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs);
Status infer_data_movement(const Node& node, std::span<const ValueInfo> inputs,
                           std::vector<InferredOutput>& outputs);
Status infer_pooling(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs);
Status infer_dense(const Node& node, std::span<const ValueInfo> inputs,
                   std::vector<InferredOutput>& outputs);
Status infer_recurrent(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs);
Status infer_control_flow(const Node& node, std::span<const ValueInfo> inputs,
                          std::vector<InferredOutput>& outputs);
Status infer_attention(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs);
// Op groups with files of their own, called from their family's function: ScatterND,
// ScatterElements, GatherElements, Trilu (data movement); CumSum, TopK, InstanceNormalization
// (reduction); Einsum (dense).
Status infer_indexing(const Node& node, std::span<const ValueInfo> inputs,
                      std::vector<InferredOutput>& outputs);
Status infer_scan_and_top_k(const Node& node, std::span<const ValueInfo> inputs,
                            std::vector<InferredOutput>& outputs);
Status infer_einsum(const Node& node, std::span<const ValueInfo> inputs,
                    std::vector<InferredOutput>& outputs);

// Helpers shared by the families.
// Numpy-style broadcast of two shapes; error names the node.
Expected<SymShape> broadcast_shapes(const Node& node, const SymShape& a, const SymShape& b);
// Normalizes a possibly negative axis against `rank`; error names the node.
Expected<std::int64_t> normalize_axis(const Node& node, std::int64_t axis, std::int64_t rank);

}  // namespace voxrt::ir
