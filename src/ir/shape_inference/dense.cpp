// Shape inference for the dense family: Conv, FusedConv, Gemm, MatMul, FusedMatMul.
#include "ir/shape_inference/dense.h"

#include <algorithm>

#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

bool all_positive(const std::vector<std::int64_t>& values) {
  return std::all_of(values.begin(), values.end(), [](std::int64_t v) { return v > 0; });
}

std::string join(const std::vector<std::int64_t>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += (i ? "," : "") + std::to_string(values[i]);
  return out + "]";
}

// A name for a derived symbolic extent ("(T+-1)/2+1"), so plans and errors can say where it
// came from; unnamed inputs give unnamed outputs.
Dim derived_dim(const Dim& input, const std::string& expression_suffix, const std::string& prefix,
                const std::string& closing) {
  if (input.symbol.empty()) return Dim{};
  return Dim::symbolic(prefix + input.symbol + expression_suffix + closing);
}

Status check_float_pair(const Node& node, const ValueInfo& a, const ValueInfo& b) {
  if (!is_floating(a.dtype)) {
    return invalid_argument(node.describe(), ": expected a floating-point input 0, found ",
                            dtype_name(a.dtype));
  }
  if (a.dtype != b.dtype) {
    return invalid_argument(node.describe(), ": inputs 0 and 1 must have one dtype, found ",
                            dtype_name(a.dtype), " and ", dtype_name(b.dtype));
  }
  return Status::ok();
}

Status infer_conv(const Node& node, std::span<const ValueInfo> inputs,
                  std::vector<InferredOutput>& outputs) {
  if (inputs.size() < 2 || inputs.size() > 3 || !inputs[0].present || !inputs[1].present) {
    return invalid_argument(node.describe(), ": expected inputs (X, W, [B]), found ", inputs.size(),
                            " inputs");
  }
  const ValueInfo& x = inputs[0];
  const ValueInfo& w = inputs[1];
  VOXRT_RETURN_IF_ERROR(check_float_pair(node, x, w));
  outputs[0].dtype = x.dtype;
  if (!x.rank_known || !w.rank_known) {
    outputs[0].rank_known = false;
    return Status::ok();
  }
  if (x.shape.size() < 3) {
    return invalid_argument(node.describe(), ": expected X of rank >= 3 (N, C, spatial...), found ",
                            sym_shape_to_string(x.shape));
  }
  if (w.shape.size() != x.shape.size()) {
    return invalid_argument(node.describe(), ": W must have the rank of X (", x.shape.size(),
                            "), found ", sym_shape_to_string(w.shape));
  }
  const int spatial_rank = static_cast<int>(x.shape.size()) - 2;
  VOXRT_ASSIGN_OR_RETURN(ConvAttributes attrs, read_conv_attributes(node, spatial_rank));
  const Dim& channels = x.shape[1];
  const Dim& out_channels = w.shape[0];
  const Dim& group_channels = w.shape[1];
  if (channels.is_known() && group_channels.is_known() &&
      channels.value != group_channels.value * attrs.group) {
    return invalid_argument(node.describe(), ": X has ", channels.value, " channels but W expects ",
                            group_channels.value, " x group ", attrs.group);
  }
  if (out_channels.is_known() && out_channels.value % attrs.group != 0) {
    return invalid_argument(node.describe(), ": W has ", out_channels.value,
                            " output channels, not a multiple of group ", attrs.group);
  }
  if (inputs.size() == 3 && inputs[2].present) {
    const ValueInfo& bias = inputs[2];
    if (bias.rank_known &&
        (bias.shape.size() != 1 || (bias.shape[0].is_known() && out_channels.is_known() &&
                                    bias.shape[0].value != out_channels.value))) {
      return invalid_argument(node.describe(), ": expected B of shape [",
                              sym_shape_to_string({out_channels}), "], found ",
                              sym_shape_to_string(bias.shape));
    }
  }
  SymShape out{x.shape[0], out_channels};
  for (int axis = 0; axis < spatial_rank; ++axis) {
    const Dim& in = x.shape[2 + axis];
    Dim kernel = w.shape[2 + axis];
    if (!attrs.kernel_shape.empty()) {
      if (kernel.is_known() && kernel.value != attrs.kernel_shape[axis]) {
        return invalid_argument(node.describe(), ": kernel_shape ", join(attrs.kernel_shape),
                                " disagrees with W ", sym_shape_to_string(w.shape));
      }
      kernel = Dim::known(attrs.kernel_shape[axis]);
    }
    if (in.is_known() && kernel.is_known()) {
      VOXRT_ASSIGN_OR_RETURN(ConvExtent extent,
                             resolve_conv_extent(node, attrs, axis, in.value, kernel.value));
      out.push_back(Dim::known(extent.output));
      continue;
    }
    if (!kernel.is_known()) {
      out.push_back(Dim{});
      continue;
    }
    const std::int64_t stride = attrs.strides[axis];
    const std::int64_t dilated = (kernel.value - 1) * attrs.dilations[axis] + 1;
    if (attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER") {
      out.push_back(stride == 1 ? in : derived_dim(in, "/" + std::to_string(stride), "ceil(", ")"));
    } else if (attrs.auto_pad == "VALID") {
      out.push_back(derived_dim(in, str_cat("-", dilated - 1, ")/", stride), "ceil((", ")"));
    } else {
      const std::int64_t offset = attrs.pads[axis] + attrs.pads[axis + spatial_rank] - dilated;
      if (stride == 1 && offset == -1) {
        out.push_back(in);
      } else {
        out.push_back(derived_dim(in, str_cat("+", offset, ")/", stride, "+1"), "(", ""));
      }
    }
  }
  outputs[0].shape = std::move(out);
  return Status::ok();
}

// Numpy matmul of A and B, with optional transposes of their last two dims (FusedMatMul).
Status infer_matmul(const Node& node, std::span<const ValueInfo> inputs,
                    std::vector<InferredOutput>& outputs, bool trans_a, bool trans_b) {
  const ValueInfo& a = inputs[0];
  const ValueInfo& b = inputs[1];
  VOXRT_RETURN_IF_ERROR(check_float_pair(node, a, b));
  outputs[0].dtype = a.dtype;
  if (!a.rank_known || !b.rank_known) {
    outputs[0].rank_known = false;
    return Status::ok();
  }
  if (a.shape.empty() || b.shape.empty()) {
    return invalid_argument(node.describe(), ": MatMul operands must have rank >= 1, found ",
                            sym_shape_to_string(a.shape), " and ", sym_shape_to_string(b.shape));
  }
  SymShape sa = a.shape;
  SymShape sb = b.shape;
  if (trans_a && sa.size() >= 2) std::swap(sa[sa.size() - 1], sa[sa.size() - 2]);
  if (trans_b && sb.size() >= 2) std::swap(sb[sb.size() - 1], sb[sb.size() - 2]);
  const Dim& k_a = sa.back();
  const Dim& k_b = sb.size() == 1 ? sb[0] : sb[sb.size() - 2];
  if (k_a.is_known() && k_b.is_known() && k_a.value != k_b.value) {
    return invalid_argument(node.describe(), ": inner dims differ: A ",
                            sym_shape_to_string(a.shape), (trans_a ? " (transposed)" : ""),
                            " and B ", sym_shape_to_string(b.shape),
                            (trans_b ? " (transposed)" : ""));
  }
  const SymShape batch_a(sa.begin(), sa.end() - std::min<std::size_t>(sa.size(), 2));
  const SymShape batch_b(sb.begin(), sb.end() - std::min<std::size_t>(sb.size(), 2));
  VOXRT_ASSIGN_OR_RETURN(SymShape out, broadcast_shapes(node, batch_a, batch_b));
  if (sa.size() >= 2) out.push_back(sa[sa.size() - 2]);
  if (sb.size() >= 2) out.push_back(sb.back());
  if (inputs.size() >= 3 && inputs[2].present && inputs[2].rank_known) {
    const ValueInfo& bias = inputs[2];
    const Dim n = sb.size() >= 2 ? sb.back() : Dim::known(1);
    if (bias.shape.size() != 1 ||
        (bias.shape[0].is_known() && n.is_known() && bias.shape[0].value != n.value)) {
      return invalid_argument(node.describe(), ": expected a bias of shape [",
                              sym_shape_to_string({n}), "], found ",
                              sym_shape_to_string(bias.shape));
    }
  }
  outputs[0].shape = std::move(out);
  return Status::ok();
}

Status infer_gemm(const Node& node, std::span<const ValueInfo> inputs,
                  std::vector<InferredOutput>& outputs) {
  const ValueInfo& a = inputs[0];
  const ValueInfo& b = inputs[1];
  VOXRT_RETURN_IF_ERROR(check_float_pair(node, a, b));
  outputs[0].dtype = a.dtype;
  if (!a.rank_known || !b.rank_known) {
    outputs[0].rank_known = false;
    return Status::ok();
  }
  if (a.shape.size() != 2 || b.shape.size() != 2) {
    return invalid_argument(node.describe(), ": Gemm takes rank-2 A and B, found ",
                            sym_shape_to_string(a.shape), " and ", sym_shape_to_string(b.shape));
  }
  const bool trans_a = node.attrs.get_int("transA", 0) != 0;
  const bool trans_b = node.attrs.get_int("transB", 0) != 0;
  const Dim m = trans_a ? a.shape[1] : a.shape[0];
  const Dim k_a = trans_a ? a.shape[0] : a.shape[1];
  const Dim k_b = trans_b ? b.shape[1] : b.shape[0];
  const Dim n = trans_b ? b.shape[0] : b.shape[1];
  if (k_a.is_known() && k_b.is_known() && k_a.value != k_b.value) {
    return invalid_argument(node.describe(), ": inner dims differ: A ",
                            sym_shape_to_string(a.shape), " (transA=", trans_a, ") and B ",
                            sym_shape_to_string(b.shape), " (transB=", trans_b, ")");
  }
  if (inputs.size() >= 3 && inputs[2].present && inputs[2].rank_known) {
    const SymShape& c = inputs[2].shape;
    const SymShape target{m, n};
    bool ok = c.size() <= 2;
    for (std::size_t i = 0; ok && i < c.size(); ++i) {
      const Dim& dc = c[i];
      const Dim& dt = target[2 - c.size() + i];
      if (dc.is_known() && dc.value != 1 && dt.is_known() && dc.value != dt.value) ok = false;
    }
    if (!ok) {
      return invalid_argument(node.describe(), ": C ", sym_shape_to_string(c),
                              " does not broadcast to [M, N] = ", sym_shape_to_string(target));
    }
  }
  outputs[0].shape = {m, n};
  return Status::ok();
}

}  // namespace

Expected<ConvAttributes> read_conv_attributes(const Node& node, int spatial_rank) {
  ConvAttributes attrs;
  attrs.spatial_rank = spatial_rank;
  const auto rank = static_cast<std::size_t>(spatial_rank);
  attrs.group = node.attrs.get_int("group", 1);
  attrs.kernel_shape = node.attrs.get_ints("kernel_shape");
  attrs.strides = node.attrs.get_ints("strides", std::vector<std::int64_t>(rank, 1));
  attrs.dilations = node.attrs.get_ints("dilations", std::vector<std::int64_t>(rank, 1));
  attrs.pads = node.attrs.get_ints("pads", std::vector<std::int64_t>(2 * rank, 0));
  attrs.auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (attrs.group < 1) {
    return invalid_argument(node.describe(), ": group must be >= 1, found ", attrs.group);
  }
  if (!attrs.kernel_shape.empty() &&
      (attrs.kernel_shape.size() != rank || !all_positive(attrs.kernel_shape))) {
    return invalid_argument(node.describe(), ": expected ", rank,
                            " positive kernel_shape values, found ", join(attrs.kernel_shape));
  }
  if (attrs.strides.size() != rank || !all_positive(attrs.strides)) {
    return invalid_argument(node.describe(), ": expected ", rank, " positive strides, found ",
                            join(attrs.strides));
  }
  if (attrs.dilations.size() != rank || !all_positive(attrs.dilations)) {
    return invalid_argument(node.describe(), ": expected ", rank, " positive dilations, found ",
                            join(attrs.dilations));
  }
  if (attrs.pads.size() != 2 * rank ||
      std::any_of(attrs.pads.begin(), attrs.pads.end(), [](std::int64_t p) { return p < 0; })) {
    return invalid_argument(node.describe(), ": expected ", 2 * rank, " non-negative pads, found ",
                            join(attrs.pads));
  }
  if (attrs.auto_pad != "NOTSET" && attrs.auto_pad != "SAME_UPPER" &&
      attrs.auto_pad != "SAME_LOWER" && attrs.auto_pad != "VALID") {
    return invalid_argument(node.describe(),
                            ": auto_pad must be NOTSET, SAME_UPPER, SAME_LOWER or VALID, found '",
                            attrs.auto_pad, "'");
  }
  return attrs;
}

Expected<ConvExtent> resolve_conv_extent(const Node& node, const ConvAttributes& attrs, int axis,
                                         std::int64_t input, std::int64_t kernel) {
  const std::int64_t stride = attrs.strides[axis];
  const std::int64_t dilated = (kernel - 1) * attrs.dilations[axis] + 1;
  ConvExtent extent;
  if (attrs.auto_pad == "SAME_UPPER" || attrs.auto_pad == "SAME_LOWER") {
    extent.output = (input + stride - 1) / stride;
    const std::int64_t total =
        std::max<std::int64_t>(0, (extent.output - 1) * stride + dilated - input);
    const std::int64_t small_half = total / 2;
    extent.pad_begin = attrs.auto_pad == "SAME_UPPER" ? small_half : total - small_half;
    extent.pad_end = total - extent.pad_begin;
  } else {
    if (attrs.auto_pad == "NOTSET") {
      extent.pad_begin = attrs.pads[axis];
      extent.pad_end = attrs.pads[axis + attrs.spatial_rank];
    }
    const std::int64_t padded = input + extent.pad_begin + extent.pad_end;
    if (padded < dilated) {
      return invalid_argument(node.describe(), ": spatial dim ", axis, " of extent ", input,
                              " (padded to ", padded, ") is smaller than the dilated kernel ",
                              dilated);
    }
    extent.output = (padded - dilated) / stride + 1;
  }
  if (extent.output < 1) {
    return invalid_argument(node.describe(), ": spatial dim ", axis, " of extent ", input,
                            " gives an empty output");
  }
  return extent;
}

Expected<ConvGeometry> resolve_conv_geometry(const Node& node, const Dims& x_dims,
                                             const Dims& w_dims) {
  if (x_dims.size() < 3 || w_dims.size() != x_dims.size()) {
    return invalid_argument(node.describe(),
                            ": expected X [N, C, spatial...] and W of the same rank, found ",
                            dims_to_string(x_dims), " and ", dims_to_string(w_dims));
  }
  const int spatial_rank = static_cast<int>(x_dims.size()) - 2;
  VOXRT_ASSIGN_OR_RETURN(ConvAttributes attrs, read_conv_attributes(node, spatial_rank));
  ConvGeometry geometry;
  geometry.batch = x_dims[0];
  geometry.in_channels = x_dims[1];
  geometry.out_channels = w_dims[0];
  geometry.group = attrs.group;
  if (geometry.in_channels != w_dims[1] * attrs.group || geometry.out_channels % attrs.group != 0) {
    return invalid_argument(node.describe(), ": X ", dims_to_string(x_dims), " and W ",
                            dims_to_string(w_dims), " do not agree with group ", attrs.group);
  }
  geometry.strides = attrs.strides;
  geometry.dilations = attrs.dilations;
  for (int axis = 0; axis < spatial_rank; ++axis) {
    const std::int64_t input = x_dims[2 + axis];
    const std::int64_t kernel = w_dims[2 + axis];
    VOXRT_ASSIGN_OR_RETURN(ConvExtent extent,
                           resolve_conv_extent(node, attrs, axis, input, kernel));
    geometry.input.push_back(input);
    geometry.kernel.push_back(kernel);
    geometry.output.push_back(extent.output);
    geometry.pads_begin.push_back(extent.pad_begin);
    geometry.pads_end.push_back(extent.pad_end);
  }
  return geometry;
}

Status infer_dense(const Node& node, std::span<const ValueInfo> inputs,
                   std::vector<InferredOutput>& outputs) {
  if (outputs.size() != 1) {
    return invalid_argument(node.describe(), ": expected 1 output, found ", outputs.size());
  }
  const bool two_required = inputs.size() >= 2 && inputs[0].present && inputs[1].present;
  switch (node.op) {
    case OpKind::kConv:
    case OpKind::kFusedConv: return infer_conv(node, inputs, outputs);
    case OpKind::kMatMul:
      if (inputs.size() != 2 || !two_required) {
        return invalid_argument(node.describe(), ": expected inputs (A, B), found ", inputs.size(),
                                " inputs");
      }
      return infer_matmul(node, inputs, outputs, false, false);
    case OpKind::kFusedMatMul:
      if (inputs.size() > 3 || !two_required) {
        return invalid_argument(node.describe(), ": expected inputs (A, B, [bias]), found ",
                                inputs.size(), " inputs");
      }
      return infer_matmul(node, inputs, outputs, node.attrs.get_int("trans_a", 0) != 0,
                          node.attrs.get_int("trans_b", 0) != 0);
    case OpKind::kGemm:
      if (inputs.size() > 3 || !two_required) {
        return invalid_argument(node.describe(), ": expected inputs (A, B, [C]), found ",
                                inputs.size(), " inputs");
      }
      return infer_gemm(node, inputs, outputs);
    case OpKind::kEinsum: return infer_einsum(node, inputs, outputs);
    default: break;
  }
  return internal_error(node.describe(), ": not a dense op");
}

}  // namespace voxrt::ir
