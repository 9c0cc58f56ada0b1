// Removes nodes that provably pass their input through unchanged: Identity, Dropout (inference
// only: its mask must be unused), Cast to the input's dtype, Transpose with the identity
// permutation, and Reshape/Expand whose output shape provably equals the input shape.
// Graph output names always survive: when the removed node's output is a graph output, its
// producer's value takes over the name, or, when that is impossible (the input is a graph
// input, a constant or another graph output), the node stays as an Identity.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_remove_identity_pass();

}  // namespace voxrt::ir
