// Walking a graph together with the graphs nested in its If nodes (then_branch / else_branch),
// for passes over every node the runtime may run: tactic selection, precision recording.
#pragma once

#include <vector>

#include "ir/graph.h"

namespace voxrt::ir {

// The nodes of `graph`, then those of its branch graphs, graph by graph (nested branches too).
inline std::vector<Node*> nodes_with_branches(const Graph& graph) {
  std::vector<const Graph*> graphs{&graph};
  std::vector<Node*> nodes;
  for (std::size_t g = 0; g < graphs.size(); ++g) {
    for (Node* node : graphs[g]->nodes()) {
      nodes.push_back(node);
      for (const char* branch : {"then_branch", "else_branch"}) {
        if (auto sub = node->attrs.get_graph(branch)) graphs.push_back(sub.get());
      }
    }
  }
  return nodes;
}

}  // namespace voxrt::ir
