// The CPU data-movement family: which tactics run each op, and the kernel factories. One explicit
// switch (STYLE.md 6); tactic ids are stored in engine files, append only.
#include "backends/cpu/data_movement/data_movement_kernels.h"

namespace voxrt::backends::cpu {

namespace {

bool has_blocked_tactic(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kTranspose:
    case ir::OpKind::kConcat:
    case ir::OpKind::kSplit:
    case ir::OpKind::kSlice:
    case ir::OpKind::kGather:
    case ir::OpKind::kPad:
    case ir::OpKind::kExpand:
    case ir::OpKind::kTile: return true;
    default: return false;
  }
}

bool is_supported(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kGather: {
      const ir::Value* indices = node.input(1);
      return indices && (indices->dtype == DType::kI64 || indices->dtype == DType::kI32);
    }
    case ir::OpKind::kRange: {
      const ir::Value* start = node.input(0);
      return start && (start->dtype == DType::kF32 || start->dtype == DType::kI32 ||
                       start->dtype == DType::kI64);
    }
    case ir::OpKind::kScatterND:
    case ir::OpKind::kScatterElements:
    case ir::OpKind::kGatherElements: {
      const ir::Value* indices = node.input(1);
      return indices && (indices->dtype == DType::kI64 || indices->dtype == DType::kI32);
    }
    case ir::OpKind::kTrilu:
    case ir::OpKind::kTranspose:
    case ir::OpKind::kReshape:
    case ir::OpKind::kFlatten:
    case ir::OpKind::kSqueeze:
    case ir::OpKind::kUnsqueeze:
    case ir::OpKind::kConcat:
    case ir::OpKind::kSplit:
    case ir::OpKind::kSlice:
    case ir::OpKind::kPad:
    case ir::OpKind::kShape:
    case ir::OpKind::kSize:
    case ir::OpKind::kConstantOfShape:
    case ir::OpKind::kExpand:
    case ir::OpKind::kTile: return true;
    default: return false;
  }
}

}  // namespace

std::vector<TacticInfo> data_movement_tactics(const ir::Node& node) {
  if (!is_supported(node)) return {};
  std::vector<TacticInfo> tactics{{kReferenceTactic, "reference"}};
  if (has_blocked_tactic(node.op)) tactics.push_back({data_movement::kBlockedTactic, "blocked"});
  return tactics;
}

Expected<std::unique_ptr<Kernel>> make_data_movement_kernel(const ir::Node& node, TacticId tactic) {
  if (!is_supported(node)) {
    return unsupported(node.describe(), ": the CPU data-movement kernels do not support this node");
  }
  if (tactic != kReferenceTactic &&
      !(tactic == data_movement::kBlockedTactic && has_blocked_tactic(node.op))) {
    return unsupported(node.describe(), ": no CPU data-movement tactic ", tactic, " for this op");
  }
  const bool blocked = tactic == data_movement::kBlockedTactic;
  using namespace data_movement;
  switch (node.op) {
    case ir::OpKind::kReshape:
    case ir::OpKind::kFlatten:
    case ir::OpKind::kSqueeze:
    case ir::OpKind::kUnsqueeze: return make_copy_kernel();
    case ir::OpKind::kTranspose: return make_transpose_kernel(node, blocked);
    case ir::OpKind::kConcat: return make_concat_kernel(node, blocked);
    case ir::OpKind::kSplit: return make_split_kernel(node, blocked);
    case ir::OpKind::kSlice: return make_slice_kernel(node, blocked);
    case ir::OpKind::kGather: return make_gather_kernel(node, blocked);
    case ir::OpKind::kPad: return make_pad_kernel(node, blocked);
    case ir::OpKind::kExpand: return make_expand_kernel(blocked);
    case ir::OpKind::kTile: return make_tile_kernel(blocked);
    case ir::OpKind::kShape: return make_shape_kernel(node);
    case ir::OpKind::kSize: return make_size_kernel();
    case ir::OpKind::kConstantOfShape: return make_constant_of_shape_kernel(node);
    case ir::OpKind::kRange: return make_range_kernel();
    case ir::OpKind::kScatterND: return make_scatter_nd_kernel(node);
    case ir::OpKind::kScatterElements:
    case ir::OpKind::kGatherElements: return make_elements_kernel(node);
    case ir::OpKind::kTrilu: return make_trilu_kernel(node);
    default: break;
  }
  return unsupported(node.describe(), ": not a data-movement op");
}

}  // namespace voxrt::backends::cpu
