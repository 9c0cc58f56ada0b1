// Constant folding: replaces every node whose outputs are computable at build time by constant
// values, and inlines the taken branch of an If whose condition is constant.
#pragma once

#include <cstddef>
#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

// Results larger than this stay computed at run time (they would bloat the engine file).
inline constexpr std::size_t kDefaultMaxFoldedBytes = 64u << 20;

// Nodes whose outputs get `data` from shape inference (Shape of a known shape, Gather/Concat of
// small shape tensors) are folded without the evaluator; other nodes whose inputs are all
// constant are computed with `evaluator` (the builder passes the CPU reference kernels). Nodes
// the evaluator cannot run are left alone. Repeats until nothing changes; prunes unused values.
std::unique_ptr<Pass> make_constant_folding_pass(
    NodeEvaluator evaluator, std::size_t max_folded_bytes = kDefaultMaxFoldedBytes);

}  // namespace voxrt::ir
