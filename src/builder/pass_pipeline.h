// The order of graph passes (the builder owns it; each pass lives in src/ir/passes/).
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace voxrt::builder {

// Fusions whose result only some backends run: each is made only when the target's kernels
// take it (the CPU backend takes all of them).
struct FusionTarget {
  bool attention = true;        // recognize_attention: the Attention op (id 200)
  bool silu_activation = true;  // "silu" in FusedMatMul / FusedConv epilogues
};

// Runs the optimization passes to a fixed point; appends "pass: change" lines to `changes`.
Status optimize_graph(ir::Graph& graph, std::vector<std::string>& changes,
                      const FusionTarget& target = {});

// Computes a node's outputs with the CPU reference kernels (constant folding's evaluator).
Expected<std::vector<Tensor>> evaluate_with_reference_kernels(
    const ir::Node& node, std::span<const Tensor* const> inputs);

}  // namespace voxrt::builder
