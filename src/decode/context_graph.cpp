#include "decode/context_graph.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace voxrt::decode {

int ContextGraph::child(int node, int unit) const {
  const auto& children = nodes_[static_cast<std::size_t>(node)].children;
  auto it = std::lower_bound(children.begin(), children.end(), std::pair<int, int>{unit, -1});
  return it != children.end() && it->first == unit ? it->second : -1;
}

Expected<ContextGraph> ContextGraph::build(const std::vector<std::vector<int>>& phrases,
                                           float bonus_per_unit) {
  if (!std::isfinite(bonus_per_unit)) {
    return invalid_argument("hotwords: expected a finite bonus per unit, found ", bonus_per_unit);
  }
  ContextGraph graph;
  graph.nodes_.emplace_back();
  for (std::size_t p = 0; p < phrases.size(); ++p) {
    if (phrases[p].empty()) return invalid_argument("hotwords: phrase ", p, " has no units");
    int node = kRoot;
    for (int unit : phrases[p]) {
      int next = graph.child(node, unit);
      if (next < 0) {
        next = static_cast<int>(graph.nodes_.size());
        Node created;
        created.unit = unit;
        created.score = graph.nodes_[static_cast<std::size_t>(node)].score + bonus_per_unit;
        graph.nodes_.push_back(created);
        auto& children = graph.nodes_[static_cast<std::size_t>(node)].children;
        children.insert(
            std::lower_bound(children.begin(), children.end(), std::pair<int, int>{unit, -1}),
            {unit, next});
      }
      node = next;
    }
    graph.nodes_[static_cast<std::size_t>(node)].is_end = true;
  }
  // Failure links, breadth first: the longest proper suffix of a node's path that is a path too.
  std::deque<int> queue;
  for (const auto& [unit, node] : graph.nodes_[kRoot].children) {
    graph.nodes_[static_cast<std::size_t>(node)].fail = kRoot;
    queue.push_back(node);
  }
  while (!queue.empty()) {
    const int node = queue.front();
    queue.pop_front();
    for (const auto& [unit, next] : graph.nodes_[static_cast<std::size_t>(node)].children) {
      int fail = graph.nodes_[static_cast<std::size_t>(node)].fail;
      while (fail != kRoot && graph.child(fail, unit) < 0) {
        fail = graph.nodes_[static_cast<std::size_t>(fail)].fail;
      }
      const int target = graph.child(fail, unit);
      graph.nodes_[static_cast<std::size_t>(next)].fail =
          target >= 0 && target != next ? target : kRoot;
      queue.push_back(next);
    }
  }
  return graph;
}

Expected<ContextGraph> ContextGraph::from_phrases(const Vocabulary& vocabulary,
                                                  const std::vector<std::string>& phrases,
                                                  float bonus_per_unit) {
  std::vector<std::vector<int>> encoded;
  for (const std::string& phrase : phrases) {
    VOXRT_ASSIGN_OR_RETURN(std::vector<int> units, vocabulary.encode(phrase));
    encoded.push_back(std::move(units));
  }
  return build(encoded, bonus_per_unit);
}

float ContextGraph::forward(int state, int unit, int& next_state) const {
  int next = child(state, unit);
  if (next < 0) {
    // Follow failure links to the longest suffix that the unit extends (or the root).
    next = kRoot;
    if (state != kRoot) {
      int fail = nodes_[static_cast<std::size_t>(state)].fail;
      while (fail != kRoot && child(fail, unit) < 0) {
        fail = nodes_[static_cast<std::size_t>(fail)].fail;
      }
      next = std::max(child(fail, unit), kRoot);
    }
  }
  const float delta =
      nodes_[static_cast<std::size_t>(next)].score - nodes_[static_cast<std::size_t>(state)].score;
  // A completed phrase keeps its bonus; matching starts afresh.
  next_state = nodes_[static_cast<std::size_t>(next)].is_end ? kRoot : next;
  return delta;
}

int ContextGraph::greedy_choice(std::span<const float> scores, int blank, int unk,
                                int state) const {
  int chosen = 0;
  float chosen_score = -std::numeric_limits<float>::infinity();
  for (int k = 0; k < static_cast<int>(scores.size()); ++k) {
    float score = scores[static_cast<std::size_t>(k)];
    if (k != blank && k != unk) {
      int next = 0;
      score += std::max(0.0f, forward(state, k, next));
    }
    if (score > chosen_score) {
      chosen_score = score;
      chosen = k;
    }
  }
  return chosen;
}

}  // namespace voxrt::decode
