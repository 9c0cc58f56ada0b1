// The CPU elementwise family: which tactics run a node, and the kernel for a tactic.
//   0 reference   naive loops, N-d broadcast index per element, one thread (the test oracle)
//   1 vectorized  coalesced broadcast with contiguous/scalar inner loops, branch-free exp,
//                 sigmoid, tanh and erf, blocked FusedPointwise, split over the thread pool
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise/elementwise_kernels.h"

namespace voxrt::backends::cpu {
namespace {

Expected<elementwise::KernelFn> make_fn(const ir::Node& node, bool fast) {
  switch (node.op) {
    case ir::OpKind::kCast: return elementwise::make_cast_fn(node, fast);
    case ir::OpKind::kFusedPointwise: return elementwise::make_fused_pointwise_fn(node, fast);
    case ir::OpKind::kAdd:
    case ir::OpKind::kSub:
    case ir::OpKind::kMul:
    case ir::OpKind::kDiv:
    case ir::OpKind::kPow:
    case ir::OpKind::kMax:
    case ir::OpKind::kMin:
    case ir::OpKind::kMod:
    case ir::OpKind::kEqual:
    case ir::OpKind::kGreater:
    case ir::OpKind::kGreaterOrEqual:
    case ir::OpKind::kLess:
    case ir::OpKind::kLessOrEqual:
    case ir::OpKind::kAnd:
    case ir::OpKind::kOr:
    case ir::OpKind::kXor:
    case ir::OpKind::kWhere: return elementwise::make_binary_fn(node, fast);
    default: break;
  }
  if (ir::op_family(node.op) != ir::OpFamily::kElementwise) {
    return unsupported(node.describe(), ": not an elementwise op");
  }
  return elementwise::make_unary_fn(node, fast);
}

}  // namespace

std::vector<TacticInfo> elementwise_tactics(const ir::Node& node) {
  if (!make_fn(node, false).has_value()) return {};
  return {TacticInfo{kReferenceTactic, "reference"},
          TacticInfo{elementwise::kTacticVectorized, "vectorized"}};
}

Expected<std::unique_ptr<Kernel>> make_elementwise_kernel(const ir::Node& node, TacticId tactic) {
  if (tactic != kReferenceTactic && tactic != elementwise::kTacticVectorized) {
    return unsupported(node.describe(), ": elementwise tactic ", tactic,
                       " is unknown to this build (known: 0 reference, 1 vectorized)");
  }
  VOXRT_ASSIGN_OR_RETURN(elementwise::KernelFn fn,
                         make_fn(node, tactic == elementwise::kTacticVectorized));
  return std::unique_ptr<Kernel>(std::make_unique<elementwise::FunctionKernel>(std::move(fn)));
}

}  // namespace voxrt::backends::cpu
