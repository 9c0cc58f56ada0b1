// Shape inference for the element-indexing ops of the data-movement family: ScatterND,
// ScatterElements, GatherElements and Trilu (ONNX opsets 11-18). Each output has the dtype of
// the data; ScatterND, ScatterElements and Trilu keep its shape, GatherElements takes the
// indices' shape.
#include <string>

#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

bool is_index_dtype(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32;
}

Status require(const Node& node, std::span<const ValueInfo> in, std::size_t count,
               const char* signature) {
  if (in.size() < count || node.outputs.size() != 1) {
    return invalid_argument(node.describe(), ": expected inputs ", signature,
                            " and one output, found ", in.size(), " inputs and ",
                            node.outputs.size(), " outputs");
  }
  for (std::size_t i = 0; i < count; ++i) {
    if (!in[i].present) return invalid_argument(node.describe(), ": input ", i, " is missing");
  }
  return Status::ok();
}

Status check_reduction(const Node& node) {
  const std::string reduction = node.attrs.get_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min") {
    return invalid_argument(
        node.describe(), ": reduction must be none, add, mul, max or min, found '", reduction, "'");
  }
  return Status::ok();
}

Status check_indices(const Node& node, const ValueInfo& indices) {
  if (!is_index_dtype(indices.dtype)) {
    return invalid_argument(node.describe(), ": indices must be i64 or i32, found ",
                            dtype_name(indices.dtype));
  }
  return Status::ok();
}

// Known dims of `a` and `b` must agree axis by axis (same rank).
Status check_same_dims(const Node& node, const char* a_name, const SymShape& a, const char* b_name,
                       const SymShape& b, std::size_t begin_a, std::size_t begin_b,
                       std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    const Dim& da = a[begin_a + i];
    const Dim& db = b[begin_b + i];
    if (da.is_known() && db.is_known() && da.value != db.value) {
      return invalid_argument(node.describe(), ": ", a_name, " ", sym_shape_to_string(a), " and ",
                              b_name, " ", sym_shape_to_string(b), " disagree at ", a_name, " dim ",
                              begin_a + i);
    }
  }
  return Status::ok();
}

Status infer_scatter_nd(const Node& node, std::span<const ValueInfo> in,
                        std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require(node, in, 3, "(data, indices, updates)"));
  VOXRT_RETURN_IF_ERROR(check_reduction(node));
  const ValueInfo& data = in[0];
  const ValueInfo& indices = in[1];
  const ValueInfo& updates = in[2];
  VOXRT_RETURN_IF_ERROR(check_indices(node, indices));
  if (updates.dtype != data.dtype) {
    return invalid_argument(node.describe(), ": updates must have the dtype of data (",
                            dtype_name(data.dtype), "), found ", dtype_name(updates.dtype));
  }
  out[0].dtype = data.dtype;
  out[0].shape = data.shape;
  out[0].rank_known = data.rank_known;
  if (!data.rank_known || !indices.rank_known || !updates.rank_known) return Status::ok();
  if (indices.shape.empty() || !indices.shape.back().is_known()) return Status::ok();
  const auto q = indices.shape.size();
  const auto k = static_cast<std::size_t>(indices.shape.back().value);
  if (k < 1 || k > data.shape.size()) {
    return invalid_argument(node.describe(), ": indices ", sym_shape_to_string(indices.shape),
                            " index ", k, " dims of data ", sym_shape_to_string(data.shape),
                            " (expected 1 to its rank)");
  }
  const std::size_t expected_rank = q - 1 + data.shape.size() - k;
  if (updates.shape.size() != expected_rank) {
    return invalid_argument(node.describe(), ": updates ", sym_shape_to_string(updates.shape),
                            " must have rank ", expected_rank, " (indices.shape[:-1] + data.shape[",
                            k, ":])");
  }
  VOXRT_RETURN_IF_ERROR(
      check_same_dims(node, "updates", updates.shape, "indices", indices.shape, 0, 0, q - 1));
  return check_same_dims(node, "updates", updates.shape, "data", data.shape, q - 1, k,
                         data.shape.size() - k);
}

Status infer_elements(const Node& node, std::span<const ValueInfo> in,
                      std::vector<InferredOutput>& out) {
  const bool scatter = node.op == OpKind::kScatterElements;
  VOXRT_RETURN_IF_ERROR(
      require(node, in, scatter ? 3 : 2, scatter ? "(data, indices, updates)" : "(data, indices)"));
  if (scatter) VOXRT_RETURN_IF_ERROR(check_reduction(node));
  const ValueInfo& data = in[0];
  const ValueInfo& indices = in[1];
  VOXRT_RETURN_IF_ERROR(check_indices(node, indices));
  if (scatter && in[2].dtype != data.dtype) {
    return invalid_argument(node.describe(), ": updates must have the dtype of data (",
                            dtype_name(data.dtype), "), found ", dtype_name(in[2].dtype));
  }
  out[0].dtype = data.dtype;
  const ValueInfo& shape_source = scatter ? data : indices;
  out[0].shape = shape_source.shape;
  out[0].rank_known = shape_source.rank_known;
  if (!data.rank_known || !indices.rank_known) return Status::ok();
  if (indices.shape.size() != data.shape.size()) {
    return invalid_argument(node.describe(), ": indices ", sym_shape_to_string(indices.shape),
                            " must have the rank of data ", sym_shape_to_string(data.shape));
  }
  VOXRT_RETURN_IF_ERROR(normalize_axis(node, node.attrs.get_int("axis", 0),
                                       static_cast<std::int64_t>(data.shape.size()))
                            .status());
  if (scatter && in[2].rank_known) {
    if (in[2].shape.size() != indices.shape.size()) {
      return invalid_argument(node.describe(), ": updates ", sym_shape_to_string(in[2].shape),
                              " must have the shape of indices ",
                              sym_shape_to_string(indices.shape));
    }
    return check_same_dims(node, "updates", in[2].shape, "indices", indices.shape, 0, 0,
                           indices.shape.size());
  }
  return Status::ok();
}

Status infer_trilu(const Node& node, std::span<const ValueInfo> in,
                   std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require(node, in, 1, "(input, [k])"));
  const ValueInfo& x = in[0];
  if (in.size() > 1 && in[1].present) {
    if (in[1].dtype != DType::kI64) {
      return invalid_argument(node.describe(), ": k must be an i64 scalar, found ",
                              dtype_name(in[1].dtype));
    }
    if (in[1].data && in[1].data->element_count() != 1) {
      return invalid_argument(node.describe(), ": k must be a scalar, found ",
                              dims_to_string(in[1].data->dims()));
    }
  }
  if (x.rank_known && x.shape.size() < 2) {
    return invalid_argument(node.describe(), ": input must have rank >= 2, found ",
                            sym_shape_to_string(x.shape));
  }
  out[0].dtype = x.dtype;
  out[0].shape = x.shape;
  out[0].rank_known = x.rank_known;
  return Status::ok();
}

}  // namespace

Status infer_indexing(const Node& node, std::span<const ValueInfo> inputs,
                      std::vector<InferredOutput>& outputs) {
  switch (node.op) {
    case OpKind::kScatterND: return infer_scatter_nd(node, inputs, outputs);
    case OpKind::kScatterElements:
    case OpKind::kGatherElements: return infer_elements(node, inputs, outputs);
    case OpKind::kTrilu: return infer_trilu(node, inputs, outputs);
    default: break;
  }
  return internal_error(node.describe(), ": not an element-indexing op");
}

}  // namespace voxrt::ir
