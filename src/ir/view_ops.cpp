#include "ir/view_ops.h"

namespace voxrt::ir {

bool is_view_op(const Node& node) {
  switch (node.op) {
    case OpKind::kReshape:
    case OpKind::kFlatten:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kIdentity: return node.outputs.size() == 1;
    case OpKind::kDropout: return node.outputs.size() == 1 || node.output(1) == nullptr;
    default: return false;
  }
}

}  // namespace voxrt::ir
