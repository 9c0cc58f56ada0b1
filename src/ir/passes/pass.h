// Every graph pass has one interface (STYLE.md 3): apply() rewrites the graph in place and
// reports each change in words, so `voxrt build --verbose` and inspect can say what happened.
// A fusion is a pattern rewrite in a file of its own (src/ir/passes/<pass>.cpp + .h exposing
// make_<pass>_pass()); the builder owns the order (src/builder/pass_pipeline.cpp).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"

namespace voxrt::ir {

struct PassReport {
  // One line per rewrite: "fused Conv 'conv1' + Relu 'relu1' into FusedConv".
  std::vector<std::string> changes;
  bool changed() const { return !changes.empty(); }
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;
  virtual Status apply(Graph& graph, PassReport& report) = 0;
};

// Computes a node's outputs from constant inputs (the builder passes the CPU reference kernels),
// so constant folding in ir/ needs no backend.
using NodeEvaluator = std::function<Expected<std::vector<Tensor>>(
    const Node& node, std::span<const Tensor* const> inputs)>;

}  // namespace voxrt::ir
