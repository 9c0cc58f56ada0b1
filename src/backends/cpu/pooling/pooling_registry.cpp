// The CPU pooling family: f32 MaxPool/AveragePool/GlobalAveragePool/GlobalMaxPool. MaxPool's
// optional Indices output is not supported (no tactic when it is requested).
#include "backends/cpu/pooling/pooling_kernels.h"

namespace voxrt::backends::cpu {

std::vector<TacticInfo> pooling_tactics(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || x->dtype != DType::kF32 || node.outputs.empty()) return {};
  if (node.op == ir::OpKind::kMaxPool && node.output(1)) return {};
  return {{kReferenceTactic, "reference"}, {pooling::kBlockedTactic, "blocked"}};
}

Expected<std::unique_ptr<Kernel>> make_pooling_kernel(const ir::Node& node, TacticId tactic) {
  if (pooling_tactics(node).empty()) {
    return unsupported(node.describe(),
                       ": CPU pooling needs an f32 input (and no MaxPool Indices output)");
  }
  switch (tactic) {
    case kReferenceTactic: return pooling::make_reference_pool_kernel(node);
    case pooling::kBlockedTactic: return pooling::make_blocked_pool_kernel(node);
    default: break;
  }
  return unsupported(node.describe(), ": no CPU pooling tactic ", tactic);
}

}  // namespace voxrt::backends::cpu
