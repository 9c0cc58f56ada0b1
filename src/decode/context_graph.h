// Hotword boosting as a context graph (the approach of icefall / sherpa's ContextGraph): the
// phrases' unit sequences form a prefix trie with Aho-Corasick failure links. Each unit that
// extends a partial match earns `bonus_per_unit`; when the match breaks, the bonus it had earned
// is taken back (the score moves to the failure state's), so only completed phrases keep a
// boost. A completed phrase keeps its bonus and matching restarts at the root. Immutable after
// construction: each stream holds one (set when it opens) and a state id per hypothesis.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "decode/vocabulary.h"

namespace voxrt::decode {

class ContextGraph {
 public:
  // Phrases as unit id sequences (none empty).
  static Expected<ContextGraph> build(const std::vector<std::vector<int>>& phrases,
                                      float bonus_per_unit);
  // Phrases as text, split into units by the vocabulary.
  static Expected<ContextGraph> from_phrases(const Vocabulary& vocabulary,
                                             const std::vector<std::string>& phrases,
                                             float bonus_per_unit);

  static constexpr int kRoot = 0;
  // The score change for `unit` from `state`; writes the next state.
  float forward(int state, int unit, int& next_state) const;
  // Greedy search's choice of unit with hotwords: the best of scores[k] plus k's bonus from
  // `state` (never below 0: greedy cannot take a bonus back later, so a unit that extends a match
  // competes with its bonus and one that breaks a match loses nothing). The blank and `unk` (-1:
  // none) get no bonus. Scores may be logits or log-probabilities (they differ by a constant).
  int greedy_choice(std::span<const float> scores, int blank, int unk, int state) const;
  // At the end of an utterance: takes back the bonus of an unfinished match.
  float finalize(int state) const { return -nodes_[static_cast<std::size_t>(state)].score; }
  std::size_t node_count() const { return nodes_.size(); }

 private:
  struct Node {
    int unit = -1;
    float score = 0.0f;  // bonus accumulated from the root
    bool is_end = false;
    int fail = kRoot;
    std::vector<std::pair<int, int>> children;  // (unit, node), sorted by unit
  };
  int child(int node, int unit) const;

  std::vector<Node> nodes_;
};

}  // namespace voxrt::decode
