#include "ir/passes/eliminate_dead_nodes.h"

#include <unordered_set>

namespace voxrt::ir {

namespace {

class EliminateDeadNodesPass final : public Pass {
 public:
  std::string_view name() const override { return "eliminate_dead_nodes"; }

  Status apply(Graph& graph, PassReport& report) override {
    VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.topological_order());
    std::unordered_set<const Value*> live(graph.outputs.begin(), graph.outputs.end());
    std::vector<Node*> dead;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      Node* node = *it;
      bool reaches_output = false;
      for (const Value* out : node->outputs)
        reaches_output = reaches_output || (out && live.count(out));
      if (!reaches_output) {
        dead.push_back(node);
        continue;
      }
      for (const Value* in : node->inputs) {
        if (in) live.insert(in);
      }
    }
    for (Node* node : dead) {
      report.changes.push_back(
          str_cat("removed dead ", node->describe(), ": no output reaches a graph output"));
      graph.remove_node(node);
    }
    const std::size_t values_before = graph.values().size();
    graph.prune_unused_values();
    const std::size_t pruned = values_before - graph.values().size();
    if (pruned > 0) report.changes.push_back(str_cat("pruned ", pruned, " unused values"));
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_eliminate_dead_nodes_pass() {
  return std::make_unique<EliminateDeadNodesPass>();
}

}  // namespace voxrt::ir
