// Dead-node elimination: removes nodes none of whose outputs reach a graph output, then prunes
// values that nothing refers to.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_eliminate_dead_nodes_pass();

}  // namespace voxrt::ir
