// The CPU reduction family's table: which tactics run a node and which factory builds them.
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/reduction/reduction_kernels.h"

namespace voxrt::backends::cpu {
namespace {

bool family_supports(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kReduceMean:
    case ir::OpKind::kReduceSum:
    case ir::OpKind::kReduceMax:
    case ir::OpKind::kReduceMin:
    case ir::OpKind::kReduceProd:
    case ir::OpKind::kReduceL2:
    case ir::OpKind::kReduceSumSquare:
    case ir::OpKind::kReduceLogSumExp:
    case ir::OpKind::kArgMax: return reduction::reduce_supports(node);
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: return reduction::softmax_supports(node);
    case ir::OpKind::kLayerNormalization: return reduction::layer_norm_supports(node);
    case ir::OpKind::kBatchNormalization: return reduction::batch_norm_supports(node);
    case ir::OpKind::kCumSum:
    case ir::OpKind::kTopK: return reduction::scan_and_top_k_supports(node);
    case ir::OpKind::kInstanceNormalization: return reduction::instance_norm_supports(node);
    default: return false;
  }
}

bool has_vectorized_tactic(ir::OpKind op) {
  return op != ir::OpKind::kCumSum && op != ir::OpKind::kTopK &&
         op != ir::OpKind::kInstanceNormalization;
}

}  // namespace

std::vector<TacticInfo> reduction_tactics(const ir::Node& node) {
  if (!family_supports(node)) return {};
  if (!has_vectorized_tactic(node.op)) return {TacticInfo{kReferenceTactic, "reference"}};
  return {TacticInfo{kReferenceTactic, "reference"},
          TacticInfo{reduction::kVectorizedTactic, "vectorized"}};
}

Expected<std::unique_ptr<Kernel>> make_reduction_kernel(const ir::Node& node, TacticId tactic) {
  if (!family_supports(node)) {
    if (!node.input(0)) return invalid_argument(node.describe(), ": input 0 is missing");
    return unsupported(node.describe(),
                       ": the CPU backend has no kernel for this op with input dtype ",
                       dtype_name(node.input(0)->dtype));
  }
  if (tactic != kReferenceTactic &&
      (tactic != reduction::kVectorizedTactic || !has_vectorized_tactic(node.op))) {
    return unsupported(node.describe(), ": unknown reduction tactic ", tactic,
                       " (expected 0 reference, or 1 vectorized where the op has it)");
  }
  switch (node.op) {
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: return reduction::make_softmax_kernel(node, tactic);
    case ir::OpKind::kLayerNormalization: return reduction::make_layer_norm_kernel(node, tactic);
    case ir::OpKind::kBatchNormalization: return reduction::make_batch_norm_kernel(node, tactic);
    case ir::OpKind::kCumSum:
    case ir::OpKind::kTopK: return reduction::make_scan_or_top_k_kernel(node);
    case ir::OpKind::kInstanceNormalization: return reduction::make_instance_norm_kernel(node);
    default:
      return tactic == kReferenceTactic ? reduction::make_reference_reduce_kernel(node)
                                        : reduction::make_vectorized_reduce_kernel(node);
  }
}

}  // namespace voxrt::backends::cpu
