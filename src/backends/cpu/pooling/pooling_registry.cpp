// The CPU pooling family: f32 MaxPool/AveragePool/GlobalAveragePool/GlobalMaxPool; MaxPool on
// i8/u8 and with its optional Indices output runs the reference kernel only.
#include <algorithm>

#include "backends/cpu/pooling/pooling_kernels.h"

namespace voxrt::backends::cpu {

std::vector<TacticInfo> pooling_tactics(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || node.outputs.empty()) return {};
  // MaxPool on i8/u8 and MaxPool's Indices output: the reference kernel only.
  const bool max_pool = node.op == ir::OpKind::kMaxPool;
  if (max_pool && (x->dtype == DType::kI8 || x->dtype == DType::kU8 || node.output(1))) {
    if (x->dtype != DType::kF32 && x->dtype != DType::kI8 && x->dtype != DType::kU8) return {};
    return {{kReferenceTactic, "reference"}};
  }
  if (x->dtype != DType::kF32) return {};
  return {{kReferenceTactic, "reference"}, {pooling::kBlockedTactic, "blocked"}};
}

Expected<std::unique_ptr<Kernel>> make_pooling_kernel(const ir::Node& node, TacticId tactic) {
  const std::vector<TacticInfo> offered = pooling_tactics(node);
  if (std::none_of(offered.begin(), offered.end(),
                   [&](const TacticInfo& t) { return t.id == tactic; }) &&
      !offered.empty()) {
    return unsupported(node.describe(), ": pooling tactic ", tactic,
                       " does not take this node (i8/u8 or Indices: reference only)");
  }
  if (offered.empty()) {
    return unsupported(node.describe(), ": CPU pooling needs an f32 input (MaxPool also i8 or u8)");
  }
  switch (tactic) {
    case kReferenceTactic: return pooling::make_reference_pool_kernel(node);
    case pooling::kBlockedTactic: return pooling::make_blocked_pool_kernel(node);
    default: break;
  }
  return unsupported(node.describe(), ": no CPU pooling tactic ", tactic);
}

}  // namespace voxrt::backends::cpu
