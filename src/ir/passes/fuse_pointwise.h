// Fuses chains and trees of f32 elementwise ops into one FusedPointwise node (a register
// program, ir/pointwise_program.h), so a memory-bound chain reads and writes memory once.
//
// A group grows from its last op upwards: a producer joins when it is a fusable op whose every
// output use is inside the group and whose output is not a graph output (so the group stays
// convex and only its last value is visible outside). Scalar f32 constants become program
// constants; everything else the group reads becomes an input of the fused node. Groups of at
// least two ops are replaced; each replacement is one line of the PassReport.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_fuse_pointwise_pass();

}  // namespace voxrt::ir
