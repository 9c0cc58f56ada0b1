// Small graph queries that pattern-matching passes share.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace voxrt::ir {

// The one node that reads `value`, or nullptr when it has several readers, none, or is a graph
// output (then the intermediate result is needed elsewhere and cannot disappear).
inline Node* sole_consumer(const Graph& graph, const Value* value) {
  if (!value || graph.is_graph_output(value)) return nullptr;
  const std::vector<Node*> readers = graph.consumers(value);
  // consumers() lists a node once even when it reads the value twice (Mul(d, d)).
  return readers.size() == 1 ? readers[0] : nullptr;
}

// The value of a one-element numeric constant of rank <= `max_rank` (so that it cannot widen a
// broadcast with a tensor of that rank), or nullopt.
inline std::optional<float> scalar_constant(const Value* value, std::size_t max_rank) {
  if (!value || !value->is_constant()) return std::nullopt;
  const Tensor& tensor = *value->constant;
  if (tensor.dtype() == DType::kBool || tensor.element_count() != 1) return std::nullopt;
  if (tensor.rank() > max_rank) return std::nullopt;
  return static_cast<float>(tensor.element_as_double(0));
}

// Transpose's permutation, with the default (reversed axes) spelled out; empty when the input's
// rank is unknown.
inline std::vector<std::int64_t> transpose_perm(const Node& transpose) {
  std::vector<std::int64_t> perm = transpose.attrs.get_ints("perm");
  const Value* in = transpose.input(0);
  if (perm.empty() && in && in->rank_known) {
    for (std::size_t i = in->shape.size(); i-- > 0;) perm.push_back(static_cast<std::int64_t>(i));
  }
  return perm;
}

// Whether two dims are the same size: both known and equal, or the same named symbol.
inline bool same_dim(const Dim& a, const Dim& b) {
  if (a.is_known() || b.is_known()) return a.is_known() && b.is_known() && a.value == b.value;
  return !a.symbol.empty() && a.symbol == b.symbol;
}

}  // namespace voxrt::ir
