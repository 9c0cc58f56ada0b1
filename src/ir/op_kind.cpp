#include "ir/op_kind.h"

namespace voxrt::ir {

std::string_view op_name(OpKind op) {
  switch (op) {
#define VOXRT_OP_NAME(name, onnx_name, family, id) \
  case OpKind::k##name: return onnx_name;
    VOXRT_FOR_EACH_OP(VOXRT_OP_NAME)
#undef VOXRT_OP_NAME
  }
  return "?";
}

OpFamily op_family(OpKind op) {
  switch (op) {
#define VOXRT_OP_FAMILY(name, onnx_name, family, id) \
  case OpKind::k##name: return OpFamily::family;
    VOXRT_FOR_EACH_OP(VOXRT_OP_FAMILY)
#undef VOXRT_OP_FAMILY
  }
  return OpFamily::kElementwise;
}

std::string_view op_family_name(OpFamily family) {
  switch (family) {
    case OpFamily::kElementwise: return "elementwise";
    case OpFamily::kReduction: return "reduction";
    case OpFamily::kDataMovement: return "data_movement";
    case OpFamily::kPooling: return "pooling";
    case OpFamily::kDense: return "dense";
    case OpFamily::kRecurrent: return "recurrent";
    case OpFamily::kControlFlow: return "control_flow";
    case OpFamily::kAttention: return "attention";
  }
  return "?";
}

std::optional<OpKind> op_from_onnx_name(std::string_view onnx_op_type) {
#define VOXRT_OP_LOOKUP(name, onnx_name, family, id) \
  if (onnx_op_type == onnx_name) return OpKind::k##name;
  VOXRT_FOR_EACH_OP(VOXRT_OP_LOOKUP)
#undef VOXRT_OP_LOOKUP
  return std::nullopt;
}

bool is_voxrt_domain_op(OpKind op) {
  return op == OpKind::kFusedConv || op == OpKind::kFusedMatMul || op == OpKind::kFusedPointwise ||
         op == OpKind::kAttention;
}

std::optional<OpKind> op_from_id(std::uint16_t stored_id) {
#define VOXRT_OP_ID(name, onnx_name, family, id) \
  if (stored_id == id) return OpKind::k##name;
  VOXRT_FOR_EACH_OP(VOXRT_OP_ID)
#undef VOXRT_OP_ID
  return std::nullopt;
}

}  // namespace voxrt::ir
