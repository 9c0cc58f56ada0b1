// Ops whose output is their input 0's bytes under another shape (Reshape-like, Identity, an
// inference Dropout): every backend's memory plan aliases them instead of copying.
#pragma once

#include "ir/graph.h"

namespace voxrt::ir {

bool is_view_op(const Node& node);

}  // namespace voxrt::ir
