// Shape inference for CumSum, TopK and InstanceNormalization (reduction family). CumSum keeps
// its input's shape; TopK gives values and i64 indices with the axis cut to k (k from its input,
// unknown until that is known); InstanceNormalization keeps X's shape.
#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

bool is_index_dtype(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32;
}

bool is_cumsum_dtype(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kI32 || dtype == DType::kI64;
}

Status infer_cumsum(const Node& node, std::span<const ValueInfo> in,
                    std::vector<InferredOutput>& out) {
  if (in.size() != 2 || !in[0].present || !in[1].present || out.size() != 1) {
    return invalid_argument(node.describe(), ": expected inputs (x, axis) and one output");
  }
  const ValueInfo& x = in[0];
  if (!is_cumsum_dtype(x.dtype)) {
    return invalid_argument(node.describe(), ": x must be f32, i32 or i64, found ",
                            dtype_name(x.dtype));
  }
  if (!is_index_dtype(in[1].dtype)) {
    return invalid_argument(node.describe(), ": axis must be an i64 or i32 scalar, found ",
                            dtype_name(in[1].dtype));
  }
  out[0].dtype = x.dtype;
  out[0].shape = x.shape;
  out[0].rank_known = x.rank_known;
  if (in[1].data) {
    if (in[1].data->element_count() != 1) {
      return invalid_argument(node.describe(), ": axis must be a scalar, found ",
                              dims_to_string(in[1].data->dims()));
    }
    if (x.rank_known) {
      VOXRT_RETURN_IF_ERROR(normalize_axis(node, in[1].data->element_as_i64(0),
                                           static_cast<std::int64_t>(x.shape.size()))
                                .status());
    }
  }
  return Status::ok();
}

Status infer_top_k(const Node& node, std::span<const ValueInfo> in,
                   std::vector<InferredOutput>& out) {
  if (in.size() != 2 || !in[0].present || !in[1].present || out.size() != 2) {
    return invalid_argument(node.describe(),
                            ": expected inputs (X, K) and outputs (Values, Indices)");
  }
  const ValueInfo& x = in[0];
  if (!is_cumsum_dtype(x.dtype)) {
    return invalid_argument(node.describe(), ": X must be f32, i32 or i64, found ",
                            dtype_name(x.dtype));
  }
  if (in[1].dtype != DType::kI64) {
    return invalid_argument(node.describe(), ": K must be i64, found ", dtype_name(in[1].dtype));
  }
  out[0].dtype = x.dtype;
  out[1].dtype = DType::kI64;
  out[0].rank_known = out[1].rank_known = x.rank_known;
  if (!x.rank_known) return Status::ok();
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis,
                         normalize_axis(node, node.attrs.get_int("axis", -1), rank));
  SymShape shape = x.shape;
  Dim k;
  if (in[1].data) {
    if (in[1].data->element_count() != 1) {
      return invalid_argument(node.describe(), ": K must hold one value, found ",
                              dims_to_string(in[1].data->dims()));
    }
    const std::int64_t k_value = in[1].data->element_as_i64(0);
    const Dim& extent = x.shape[static_cast<std::size_t>(axis)];
    if (k_value < 0 || (extent.is_known() && k_value > extent.value)) {
      return invalid_argument(node.describe(), ": K = ", k_value, " is outside [0, ",
                              extent.is_known() ? std::to_string(extent.value) : "the axis", "]");
    }
    k = Dim::known(k_value);
  }
  shape[static_cast<std::size_t>(axis)] = k;
  out[0].shape = shape;
  out[1].shape = shape;
  return Status::ok();
}

Status infer_instance_norm(const Node& node, std::span<const ValueInfo> in,
                           std::vector<InferredOutput>& out) {
  if (in.size() != 3 || !in[0].present || !in[1].present || !in[2].present || out.size() != 1) {
    return invalid_argument(node.describe(), ": expected inputs (input, scale, B) and one output");
  }
  const ValueInfo& x = in[0];
  if (!is_floating(x.dtype) || in[1].dtype != x.dtype || in[2].dtype != x.dtype) {
    return invalid_argument(node.describe(), ": input, scale and B must share one floating dtype");
  }
  out[0].dtype = x.dtype;
  out[0].shape = x.shape;
  out[0].rank_known = x.rank_known;
  if (!x.rank_known) return Status::ok();
  if (x.shape.size() < 3) {
    return invalid_argument(node.describe(), ": input must be [N, C, D1, ...], found ",
                            sym_shape_to_string(x.shape));
  }
  const Dim& channels = x.shape[1];
  for (std::size_t i = 1; i < 3; ++i) {
    const ValueInfo& p = in[i];
    if (!p.rank_known) continue;
    if (p.shape.size() != 1 ||
        (channels.is_known() && p.shape[0].is_known() && p.shape[0].value != channels.value)) {
      return invalid_argument(
          node.describe(), ": ", i == 1 ? "scale" : "B",
          " must be [C] with C = ", channels.is_known() ? std::to_string(channels.value) : "?",
          ", found ", sym_shape_to_string(p.shape));
    }
  }
  return Status::ok();
}

}  // namespace

Status infer_scan_and_top_k(const Node& node, std::span<const ValueInfo> inputs,
                            std::vector<InferredOutput>& outputs) {
  switch (node.op) {
    case OpKind::kCumSum: return infer_cumsum(node, inputs, outputs);
    case OpKind::kTopK: return infer_top_k(node, inputs, outputs);
    case OpKind::kInstanceNormalization: return infer_instance_norm(node, inputs, outputs);
    default: break;
  }
  return internal_error(node.describe(), ": not CumSum, TopK or InstanceNormalization");
}

}  // namespace voxrt::ir
