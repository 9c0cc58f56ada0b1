// Einsum's equation resolved against its inputs' ranks, shared by shape inference and the
// kernels: every axis of every operand gets a label id; the ellipsis becomes labels of its own
// (right-aligned across operands, numpy broadcasting); an implicit output ("ij,jk") lists the
// ellipsis labels, then the letters used exactly once, alphabetically.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/shape.h"
#include "voxrt/status.h"

namespace voxrt::ir {

struct EinsumPlan {
  std::vector<std::vector<int>> operands;  // label per axis of each input (repeats = diagonal)
  std::vector<int> output;                 // label per output axis
  int label_count = 0;
  // Ellipsis labels may broadcast (size 1 against n); letters must agree exactly.
  std::vector<bool> broadcastable;
};

// `where` names the node in errors.
Expected<EinsumPlan> plan_einsum(const std::string& where, const std::string& equation,
                                 const std::vector<std::size_t>& input_ranks);

// Each label's extent from the operands' dims (-1 = unknown); error when known dims disagree.
Expected<std::vector<std::int64_t>> einsum_label_sizes(const std::string& where,
                                                       const EinsumPlan& plan,
                                                       const std::vector<Dims>& input_dims);

}  // namespace voxrt::ir
