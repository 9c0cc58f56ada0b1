// Shape inference for the reduction family: Reduce*, ArgMax, Softmax/LogSoftmax,
// LayerNormalization and BatchNormalization (inference form). Reduce* take axes as optional
// input 1 (the opset-18 form the importer produces), so at build time the axes may be unknown;
// then the rank is still known when keepdims=1 or when the number of axes is known.
#include <algorithm>
#include <limits>

#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

// Small i64 reductions are computed here so that shape subgraphs (ReduceProd of a Shape, ...)
// fold at build time; bigger tensors are left to the kernels.
constexpr std::int64_t kMaxPropagatedElements = 64;

bool is_reduce_op(OpKind op) {
  switch (op) {
    case OpKind::kReduceMean:
    case OpKind::kReduceSum:
    case OpKind::kReduceMax:
    case OpKind::kReduceMin:
    case OpKind::kReduceProd:
    case OpKind::kReduceL2:
    case OpKind::kReduceSumSquare:
    case OpKind::kReduceLogSumExp: return true;
    default: return false;
  }
}

Status check_arity(const Node& node, std::span<const ValueInfo> inputs,
                   std::vector<InferredOutput>& outputs, std::size_t min_inputs,
                   std::size_t max_inputs, std::size_t min_outputs, std::size_t max_outputs) {
  if (inputs.size() < min_inputs || inputs.size() > max_inputs) {
    return invalid_argument(node.describe(), ": expected ", min_inputs, "..", max_inputs,
                            " inputs, found ", inputs.size());
  }
  for (std::size_t i = 0; i < min_inputs; ++i) {
    if (!inputs[i].present) {
      return invalid_argument(node.describe(), ": required input ", i, " is missing");
    }
  }
  if (outputs.size() < min_outputs || outputs.size() > max_outputs) {
    return invalid_argument(node.describe(), ": expected ", min_outputs, "..", max_outputs,
                            " outputs, found ", outputs.size());
  }
  return Status::ok();
}

bool is_numeric(DType dtype) {
  return dtype != DType::kBool;
}

Status expect_floating(const Node& node, const ValueInfo& info, std::string_view what) {
  if (!is_floating(info.dtype)) {
    return invalid_argument(node.describe(), ": ", what, " must be a floating-point tensor, found ",
                            dtype_name(info.dtype));
  }
  return Status::ok();
}

// Computes a ReduceSum/Prod/Max/Min of a small known i64 tensor; `reduced[d]` marks the axes.
Tensor reduce_i64_data(OpKind op, const Tensor& input, const std::vector<bool>& reduced,
                       const Dims& output_dims) {
  const Dims& dims = input.dims();
  std::int64_t init = 0;
  if (op == OpKind::kReduceProd) init = 1;
  if (op == OpKind::kReduceMax) init = std::numeric_limits<std::int64_t>::min();
  if (op == OpKind::kReduceMin) init = std::numeric_limits<std::int64_t>::max();
  Tensor out = Tensor::uninitialized(DType::kI64, output_dims);
  std::int64_t* acc = out.data<std::int64_t>();
  std::fill(acc, acc + out.element_count(), init);
  const std::int64_t count = input.element_count();
  std::vector<std::int64_t> index(dims.size(), 0);
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t out_flat = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) out_flat = out_flat * dims[d] + index[d];
    }
    // Wrapping arithmetic, as the kernels do: overflow must not be undefined behaviour.
    const auto a = static_cast<std::uint64_t>(acc[out_flat]);
    const std::int64_t x = input.data<std::int64_t>()[flat];
    switch (op) {
      case OpKind::kReduceSum:
        acc[out_flat] = static_cast<std::int64_t>(a + static_cast<std::uint64_t>(x));
        break;
      case OpKind::kReduceProd:
        acc[out_flat] = static_cast<std::int64_t>(a * static_cast<std::uint64_t>(x));
        break;
      case OpKind::kReduceMax: acc[out_flat] = std::max(acc[out_flat], x); break;
      default: acc[out_flat] = std::min(acc[out_flat], x); break;
    }
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
  return out;
}

Status infer_reduce(const Node& node, std::span<const ValueInfo> inputs,
                    std::vector<InferredOutput>& outputs) {
  VOXRT_RETURN_IF_ERROR(check_arity(node, inputs, outputs, 1, 2, 1, 1));
  if (node.attrs.has("axes")) {
    return invalid_argument(
        node.describe(),
        ": expected axes as input 1 (the importer's form), found an axes attribute");
  }
  const ValueInfo& data = inputs[0];
  if (!is_numeric(data.dtype)) {
    return invalid_argument(node.describe(), ": cannot reduce a ", dtype_name(data.dtype),
                            " tensor");
  }
  const bool keepdims = node.attrs.get_int("keepdims", 1) != 0;
  const bool noop_with_empty_axes = node.attrs.get_int("noop_with_empty_axes", 0) != 0;
  InferredOutput& out = outputs[0];
  out.dtype = data.dtype;
  const bool has_axes = inputs.size() > 1 && inputs[1].present;
  if (has_axes && inputs[1].dtype != DType::kI64 && inputs[1].dtype != DType::kI32) {
    return invalid_argument(node.describe(), ": axes (input 1) must be i64, found ",
                            dtype_name(inputs[1].dtype));
  }
  if (!data.rank_known) {
    out.rank_known = false;
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(data.shape.size());

  if (has_axes && !inputs[1].data) {
    // Axes computed at run time: only the rank can be told, and only sometimes.
    if (keepdims) {
      out.shape.assign(data.shape.size(), Dim{});
      for (std::size_t d = 0; d < data.shape.size(); ++d) {
        if (data.shape[d].is_known() && data.shape[d].value == 1) out.shape[d] = data.shape[d];
      }
      return Status::ok();
    }
    const ValueInfo& axes = inputs[1];
    if (axes.rank_known && axes.shape.size() == 1 && axes.shape[0].is_known()) {
      const std::int64_t axis_count = axes.shape[0].value;
      if (axis_count == 0) {
        out.shape = noop_with_empty_axes ? data.shape : SymShape{};
        return Status::ok();
      }
      if (axis_count > rank) {
        return invalid_argument(node.describe(), ": ", axis_count, " axes for a rank-", rank,
                                " input");
      }
      out.shape.assign(static_cast<std::size_t>(rank - axis_count), Dim{});
      return Status::ok();
    }
    out.rank_known = false;
    return Status::ok();
  }

  std::vector<std::int64_t> axes;
  if (has_axes) {
    const Tensor& axes_tensor = *inputs[1].data;
    if (axes_tensor.rank() > 1) {
      return invalid_argument(node.describe(), ": axes must be a 1-D tensor, found shape ",
                              dims_to_string(axes_tensor.dims()));
    }
    axes = axes_tensor.to_i64_vector();
  }
  std::vector<bool> reduced(data.shape.size(), false);
  if (axes.empty()) {
    if (!noop_with_empty_axes) std::fill(reduced.begin(), reduced.end(), true);
  } else {
    for (std::int64_t axis : axes) {
      if (axis < -rank || axis >= rank) {
        return invalid_argument(node.describe(), ": axis ", axis, " is out of range for rank ",
                                rank);
      }
      const std::int64_t normalized = axis < 0 ? axis + rank : axis;
      if (reduced[static_cast<std::size_t>(normalized)]) {
        return invalid_argument(node.describe(), ": axis ", axis, " is listed twice");
      }
      reduced[static_cast<std::size_t>(normalized)] = true;
    }
  }
  for (std::size_t d = 0; d < data.shape.size(); ++d) {
    if (!reduced[d]) {
      out.shape.push_back(data.shape[d]);
    } else if (keepdims) {
      out.shape.push_back(Dim::known(1));
    }
  }

  const bool propagates = node.op == OpKind::kReduceSum || node.op == OpKind::kReduceProd ||
                          node.op == OpKind::kReduceMax || node.op == OpKind::kReduceMin;
  if (propagates && data.data && data.dtype == DType::kI64 &&
      data.data->element_count() <= kMaxPropagatedElements) {
    if (auto dims = known_dims(out.shape))
      out.data = reduce_i64_data(node.op, *data.data, reduced, *dims);
  }
  return Status::ok();
}

Status infer_arg_max(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs) {
  VOXRT_RETURN_IF_ERROR(check_arity(node, inputs, outputs, 1, 1, 1, 1));
  const ValueInfo& data = inputs[0];
  if (!is_numeric(data.dtype)) {
    return invalid_argument(node.describe(), ": cannot take ArgMax of a ", dtype_name(data.dtype),
                            " tensor");
  }
  InferredOutput& out = outputs[0];
  out.dtype = DType::kI64;
  if (!data.rank_known) {
    out.rank_known = false;
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(data.shape.size());
  const std::int64_t axis = node.attrs.get_int("axis", 0);
  if (axis < -rank || axis >= rank) {
    return invalid_argument(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  }
  const auto normalized = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  if (data.shape[normalized].is_known() && data.shape[normalized].value == 0) {
    return invalid_argument(node.describe(), ": ArgMax over axis ", axis,
                            " of size 0 has no answer (input ", sym_shape_to_string(data.shape),
                            ")");
  }
  const bool keepdims = node.attrs.get_int("keepdims", 1) != 0;
  for (std::size_t d = 0; d < data.shape.size(); ++d) {
    if (d != normalized) {
      out.shape.push_back(data.shape[d]);
    } else if (keepdims) {
      out.shape.push_back(Dim::known(1));
    }
  }
  return Status::ok();
}

Status infer_softmax(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs) {
  VOXRT_RETURN_IF_ERROR(check_arity(node, inputs, outputs, 1, 1, 1, 1));
  const ValueInfo& data = inputs[0];
  VOXRT_RETURN_IF_ERROR(expect_floating(node, data, "input"));
  InferredOutput& out = outputs[0];
  out.dtype = data.dtype;
  out.shape = data.shape;
  out.rank_known = data.rank_known;
  if (!data.rank_known) return Status::ok();
  const auto rank = static_cast<std::int64_t>(data.shape.size());
  // Opset < 13 flattens to 2-D at `axis` (default 1); opset >= 13 normalizes one axis (default -1).
  const std::int64_t axis = node.attrs.get_int("axis", node.opset < 13 ? 1 : -1);
  if (rank == 0) {
    return invalid_argument(node.describe(), ": expected an input of rank >= 1, found a scalar");
  }
  if (axis < -rank || axis >= rank) {
    return invalid_argument(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  }
  return Status::ok();
}

// True when a tensor of shape `param` broadcasts (numpy, one way) to `target`.
bool broadcasts_to(const SymShape& param, const SymShape& target) {
  if (param.size() > target.size()) return false;
  const std::size_t offset = target.size() - param.size();
  for (std::size_t i = 0; i < param.size(); ++i) {
    const Dim& p = param[i];
    const Dim& t = target[offset + i];
    if (p.is_known() && t.is_known() && p.value != 1 && p.value != t.value) return false;
  }
  return true;
}

Status infer_layer_norm(const Node& node, std::span<const ValueInfo> inputs,
                        std::vector<InferredOutput>& outputs) {
  VOXRT_RETURN_IF_ERROR(check_arity(node, inputs, outputs, 2, 3, 1, 3));
  const ValueInfo& x = inputs[0];
  VOXRT_RETURN_IF_ERROR(expect_floating(node, x, "X"));
  const std::int64_t stash_type = node.attrs.get_int("stash_type", 1);
  if (stash_type != 1) {
    return unsupported(node.describe(), ": stash_type ", stash_type,
                       " is not supported (only 1, float statistics)");
  }
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i].present && inputs[i].dtype != x.dtype) {
      return invalid_argument(node.describe(), ": input ", i, " must have X's dtype ",
                              dtype_name(x.dtype), ", found ", dtype_name(inputs[i].dtype));
    }
  }
  outputs[0].dtype = x.dtype;
  outputs[0].shape = x.shape;
  outputs[0].rank_known = x.rank_known;
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    outputs[i].dtype = DType::kF32;
    outputs[i].rank_known = x.rank_known;
  }
  if (!x.rank_known) return Status::ok();
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  const std::int64_t axis = node.attrs.get_int("axis", -1);
  if (axis < -rank || axis >= rank) {
    return invalid_argument(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  }
  const auto first_normalized = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
  const SymShape normalized_shape(x.shape.begin() + static_cast<std::ptrdiff_t>(first_normalized),
                                  x.shape.end());
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (!inputs[i].present || !inputs[i].rank_known) continue;
    if (!broadcasts_to(inputs[i].shape, normalized_shape)) {
      return invalid_argument(node.describe(), ": ", i == 1 ? "Scale" : "B", " of shape ",
                              sym_shape_to_string(inputs[i].shape),
                              " does not broadcast to the normalized shape ",
                              sym_shape_to_string(normalized_shape));
    }
  }
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    outputs[i].shape = x.shape;
    for (std::size_t d = first_normalized; d < x.shape.size(); ++d)
      outputs[i].shape[d] = Dim::known(1);
  }
  return Status::ok();
}

Status infer_batch_norm(const Node& node, std::span<const ValueInfo> inputs,
                        std::vector<InferredOutput>& outputs) {
  VOXRT_RETURN_IF_ERROR(check_arity(node, inputs, outputs, 5, 5, 1, 5));
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    if (node.output(i)) {
      return unsupported(node.describe(), ": output ", i,
                         " (training statistics) is not supported; only the inference form is");
    }
  }
  if (node.attrs.get_int("training_mode", 0) != 0) {
    return unsupported(node.describe(), ": training_mode=1 is not supported; only inference");
  }
  if (node.attrs.get_int("spatial", 1) == 0) {
    return unsupported(node.describe(), ": spatial=0 (per-element statistics) is not supported");
  }
  const ValueInfo& x = inputs[0];
  VOXRT_RETURN_IF_ERROR(expect_floating(node, x, "X"));
  outputs[0].dtype = x.dtype;
  outputs[0].shape = x.shape;
  outputs[0].rank_known = x.rank_known;
  if (x.rank_known && (x.shape.size() < 2 || x.shape.size() > 5)) {
    return invalid_argument(node.describe(), ": expected X of rank 2..5 (N x C x ...), found rank ",
                            x.shape.size());
  }
  const Dim channels = x.rank_known ? x.shape[1] : Dim{};
  static constexpr const char* kParamNames[] = {"", "scale", "B", "input_mean", "input_var"};
  for (std::size_t i = 1; i < 5; ++i) {
    const ValueInfo& param = inputs[i];
    VOXRT_RETURN_IF_ERROR(expect_floating(node, param, kParamNames[i]));
    if (!param.rank_known) continue;
    if (param.shape.size() != 1) {
      return invalid_argument(node.describe(), ": ", kParamNames[i],
                              " must be 1-D [C], found shape ", sym_shape_to_string(param.shape));
    }
    if (param.shape[0].is_known() && channels.is_known() &&
        param.shape[0].value != channels.value) {
      return invalid_argument(node.describe(), ": ", kParamNames[i], " has ", param.shape[0].value,
                              " elements but X has ", channels.value, " channels");
    }
  }
  return Status::ok();
}

}  // namespace

Status infer_reduction(const Node& node, std::span<const ValueInfo> inputs,
                       std::vector<InferredOutput>& outputs) {
  if (is_reduce_op(node.op)) return infer_reduce(node, inputs, outputs);
  switch (node.op) {
    case OpKind::kArgMax: return infer_arg_max(node, inputs, outputs);
    case OpKind::kSoftmax:
    case OpKind::kLogSoftmax: return infer_softmax(node, inputs, outputs);
    case OpKind::kLayerNormalization: return infer_layer_norm(node, inputs, outputs);
    case OpKind::kBatchNormalization: return infer_batch_norm(node, inputs, outputs);
    case OpKind::kCumSum:
    case OpKind::kTopK:
    case OpKind::kInstanceNormalization: return infer_scan_and_top_k(node, inputs, outputs);
    default: break;
  }
  return internal_error(node.describe(), ": not an op of the reduction family");
}

}  // namespace voxrt::ir
