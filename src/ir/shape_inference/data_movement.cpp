// Shape inference for the data-movement family. Dims that depend on input contents (Reshape's
// shape, Slice's starts, ...) come from ValueInfo::data; without it the rank is still given, with
// unknown dims. Small integer results are propagated as data (shape_data_propagation.cpp) so
// constant folding can collapse PyTorch's Shape -> Gather -> Concat -> Reshape chains.
#include "ir/shape_inference/data_movement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ir/shape_inference.h"
#include "ir/shape_inference/data_movement_propagation.h"

namespace voxrt::ir {

namespace {

bool has_input(std::span<const ValueInfo> inputs, std::size_t i) {
  return i < inputs.size() && inputs[i].present;
}

Status require_inputs(const Node& node, std::span<const ValueInfo> inputs, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) {
    if (!has_input(inputs, i)) {
      return invalid_argument(node.describe(), ": expected at least ", count, " inputs, input ", i,
                              " is missing");
    }
  }
  if (node.outputs.empty()) return invalid_argument(node.describe(), ": expected an output");
  return Status::ok();
}

bool is_integer(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32 || dtype == DType::kI8 || dtype == DType::kU8;
}

// The values of a 0-D/1-D integer input whose contents are known; nullopt when unknown or absent.
Expected<std::optional<std::vector<std::int64_t>>> int_values(const Node& node,
                                                              std::span<const ValueInfo> inputs,
                                                              std::size_t i, const char* what) {
  if (!has_input(inputs, i) || !inputs[i].data) return std::optional<std::vector<std::int64_t>>{};
  const Tensor& t = *inputs[i].data;
  if (!is_integer(t.dtype()) || t.rank() > 1) {
    return invalid_argument(node.describe(), ": ", what, " (input ", i,
                            ") must be a 1-D integer tensor, got ", dtype_name(t.dtype()), " ",
                            dims_to_string(t.dims()));
  }
  return std::optional<std::vector<std::int64_t>>{t.to_i64_vector()};
}

// Length of a 1-D input whose contents are unknown, or -1.
std::int64_t known_length(std::span<const ValueInfo> inputs, std::size_t i) {
  if (!has_input(inputs, i) || !inputs[i].rank_known) return -1;
  const SymShape& s = inputs[i].shape;
  if (s.empty()) return 1;
  return s.size() == 1 && s[0].is_known() ? s[0].value : -1;
}

Dims dims_or_unknown(const SymShape& shape) {
  Dims dims;
  for (const Dim& d : shape) dims.push_back(d.is_known() ? d.value : -1);
  return dims;
}

SymShape unknown_dims(std::size_t rank) {
  return SymShape(rank, Dim{});
}

// Product of dims; a lone symbolic dim times known 1s keeps its symbol.
Dim dim_product(const SymShape& shape, std::size_t begin, std::size_t end) {
  std::int64_t known = 1;
  const Dim* symbolic = nullptr;
  int unknown_count = 0;
  for (std::size_t i = begin; i < end; ++i) {
    if (shape[i].is_known()) {
      known *= shape[i].value;
    } else {
      symbolic = &shape[i];
      ++unknown_count;
    }
  }
  if (unknown_count == 0) return Dim::known(known);
  if (known == 0) return Dim::known(0);
  if (unknown_count == 1 && known == 1) return *symbolic;
  return Dim{};
}

void set_unknown_rank(InferredOutput& out, DType dtype) {
  out.dtype = dtype;
  out.shape.clear();
  out.rank_known = false;
}

void set_output(InferredOutput& out, DType dtype, SymShape shape) {
  out.dtype = dtype;
  out.shape = std::move(shape);
  out.rank_known = true;
}

Status infer_transpose(const Node& node, std::span<const ValueInfo> in,
                       std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(auto perm,
                         transpose_permutation(node, static_cast<std::int64_t>(x.shape.size())));
  SymShape shape;
  for (std::int64_t p : perm) shape.push_back(x.shape[static_cast<std::size_t>(p)]);
  set_output(out[0], x.dtype, shape);
  return Status::ok();
}

// Reshape's -1 when the input has symbolic dims: cancels symbols that appear on both sides.
Dim infer_reshape_wildcard(const SymShape& input, const SymShape& output, std::size_t wildcard) {
  std::map<std::string, int> symbols;
  std::int64_t known_in = 1;
  for (const Dim& d : input) {
    if (d.is_known()) {
      known_in *= d.value;
    } else if (d.symbol.empty()) {
      return Dim{};
    } else {
      ++symbols[d.symbol];
    }
  }
  std::int64_t known_out = 1;
  for (std::size_t i = 0; i < output.size(); ++i) {
    if (i == wildcard) continue;
    const Dim& d = output[i];
    if (d.is_known()) {
      known_out *= d.value;
    } else if (d.symbol.empty() || --symbols[d.symbol] < 0) {
      return Dim{};
    }
  }
  for (auto& [name, count] : symbols) {
    if (count != 0) return Dim{};
  }
  if (known_out == 0 || known_in % known_out != 0) return Dim{};
  return Dim::known(known_in / known_out);
}

Status infer_reshape(const Node& node, std::span<const ValueInfo> in,
                     std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  VOXRT_ASSIGN_OR_RETURN(auto target, int_values(node, in, 1, "shape"));
  if (!target) {
    const std::int64_t length = known_length(in, 1);
    if (length < 0) {
      set_unknown_rank(out[0], x.dtype);
    } else {
      set_output(out[0], x.dtype, unknown_dims(static_cast<std::size_t>(length)));
    }
    return Status::ok();
  }
  const bool allow_zero = node.attrs.get_int("allowzero", 0) != 0;
  SymShape shape;
  std::optional<std::size_t> wildcard;
  for (std::size_t i = 0; i < target->size(); ++i) {
    const std::int64_t v = (*target)[i];
    if (v == 0 && !allow_zero) {
      if (!x.rank_known) {
        shape.push_back(Dim{});
      } else if (i >= x.shape.size()) {
        return invalid_argument(node.describe(), ": shape[", i, "] = 0 copies input dim ", i,
                                " but the input ", sym_shape_to_string(x.shape), " has rank ",
                                x.shape.size());
      } else {
        shape.push_back(x.shape[i]);
      }
    } else if (v == -1) {
      if (wildcard) {
        return invalid_argument(node.describe(), ": shape has more than one -1 (dims ", *wildcard,
                                " and ", i, ")");
      }
      wildcard = i;
      shape.push_back(Dim{});
    } else if (v < 0) {
      return invalid_argument(node.describe(), ": shape[", i, "] = ", v,
                              " (expected -1, 0 or a positive size)");
    } else {
      shape.push_back(Dim::known(v));
    }
  }
  const std::optional<Dims> input_dims = x.rank_known ? known_dims(x.shape) : std::nullopt;
  if (wildcard) {
    std::int64_t known_out = 1;
    bool others_known = true;
    for (std::size_t i = 0; i < shape.size(); ++i) {
      if (i == *wildcard) continue;
      if (!shape[i].is_known()) others_known = false;
      known_out *= shape[i].value;
    }
    if (input_dims && others_known) {
      const std::int64_t total = element_count(*input_dims);
      if (known_out == 0 || total % known_out != 0) {
        return invalid_argument(node.describe(), ": cannot reshape ", dims_to_string(*input_dims),
                                " (", total, " elements) into ", sym_shape_to_string(shape),
                                " with the -1 dim inferred");
      }
      shape[*wildcard] = Dim::known(total / known_out);
    } else if (x.rank_known) {
      shape[*wildcard] = infer_reshape_wildcard(x.shape, shape, *wildcard);
    }
  } else if (input_dims && is_fully_known(shape)) {
    if (element_count(*input_dims) != element_count(*known_dims(shape))) {
      return invalid_argument(node.describe(), ": cannot reshape ", dims_to_string(*input_dims),
                              " into ", sym_shape_to_string(shape), ": element counts differ");
    }
  }
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_reshape(x, shape);
  return Status::ok();
}

Status infer_flatten(const Node& node, std::span<const ValueInfo> in,
                     std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_output(out[0], x.dtype, unknown_dims(2));
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  std::int64_t axis = node.attrs.get_int("axis", 1);
  if (axis < -rank || axis > rank) {
    return invalid_argument(node.describe(), ": axis ", axis, " is out of range [", -rank, ", ",
                            rank, "] for input ", sym_shape_to_string(x.shape));
  }
  if (axis < 0) axis += rank;
  const auto split = static_cast<std::size_t>(axis);
  SymShape shape{dim_product(x.shape, 0, split), dim_product(x.shape, split, x.shape.size())};
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_reshape(x, shape);
  return Status::ok();
}

Expected<std::vector<std::int64_t>> normalized_axes(const Node& node,
                                                    const std::vector<std::int64_t>& axes,
                                                    std::int64_t rank) {
  std::vector<std::int64_t> result;
  for (std::int64_t a : axes) {
    VOXRT_ASSIGN_OR_RETURN(std::int64_t axis, normalize_axis(node, a, rank));
    if (std::find(result.begin(), result.end(), axis) != result.end()) {
      return invalid_argument(node.describe(), ": axis ", a, " is repeated");
    }
    result.push_back(axis);
  }
  std::sort(result.begin(), result.end());
  return result;
}

Status infer_squeeze(const Node& node, std::span<const ValueInfo> in,
                     std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  VOXRT_ASSIGN_OR_RETURN(auto axes_values, int_values(node, in, 1, "axes"));
  SymShape shape;
  if (has_input(in, 1) && !axes_values) {
    const std::int64_t count = known_length(in, 1);
    if (count < 0 || count > rank) {
      set_unknown_rank(out[0], x.dtype);
    } else {
      set_output(out[0], x.dtype, unknown_dims(static_cast<std::size_t>(rank - count)));
    }
    return Status::ok();
  }
  if (axes_values) {
    VOXRT_ASSIGN_OR_RETURN(auto axes, normalized_axes(node, *axes_values, rank));
    for (std::int64_t a : axes) {
      const Dim& d = x.shape[static_cast<std::size_t>(a)];
      if (d.is_known() && d.value != 1) {
        return invalid_argument(node.describe(), ": cannot squeeze axis ", a, " of size ", d.value,
                                " in ", sym_shape_to_string(x.shape));
      }
    }
    for (std::int64_t i = 0; i < rank; ++i) {
      if (!std::binary_search(axes.begin(), axes.end(), i)) {
        shape.push_back(x.shape[static_cast<std::size_t>(i)]);
      }
    }
  } else {
    // Without axes every dim known to be 1 goes; symbolic dims are assumed not to be 1.
    for (const Dim& d : x.shape) {
      if (!(d.is_known() && d.value == 1)) shape.push_back(d);
    }
  }
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_reshape(x, shape);
  return Status::ok();
}

Status infer_unsqueeze(const Node& node, std::span<const ValueInfo> in,
                       std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  VOXRT_ASSIGN_OR_RETURN(auto axes_values, int_values(node, in, 1, "axes"));
  if (!x.rank_known || !axes_values) {
    const std::int64_t count = known_length(in, 1);
    if (!x.rank_known || count < 0) {
      set_unknown_rank(out[0], x.dtype);
    } else {
      set_output(out[0], x.dtype, unknown_dims(x.shape.size() + static_cast<std::size_t>(count)));
    }
    return Status::ok();
  }
  const auto out_rank = static_cast<std::int64_t>(x.shape.size() + axes_values->size());
  VOXRT_ASSIGN_OR_RETURN(auto axes, normalized_axes(node, *axes_values, out_rank));
  SymShape shape;
  std::size_t next_input_dim = 0;
  for (std::int64_t i = 0; i < out_rank; ++i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) {
      shape.push_back(Dim::known(1));
    } else {
      shape.push_back(x.shape[next_input_dim++]);
    }
  }
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_reshape(x, shape);
  return Status::ok();
}

Status infer_concat(const Node& node, std::span<const ValueInfo> in,
                    std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo* ranked = nullptr;
  for (const ValueInfo& v : in) {
    if (!v.present) {
      return invalid_argument(node.describe(), ": Concat inputs may not be omitted");
    }
    if (v.rank_known && !ranked) ranked = &v;
  }
  if (!ranked) {
    set_unknown_rank(out[0], in[0].dtype);
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(ranked->shape.size());
  if (!node.attrs.has("axis"))
    return invalid_argument(node.describe(), ": attribute axis is required");
  VOXRT_ASSIGN_OR_RETURN(std::int64_t axis,
                         normalize_axis(node, node.attrs.get_int("axis", 0), rank));
  SymShape shape = ranked->shape;
  std::int64_t axis_total = 0;
  bool axis_known = true;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const ValueInfo& v = in[i];
    if (v.dtype != in[0].dtype) {
      return invalid_argument(node.describe(), ": input ", i, " is ", dtype_name(v.dtype),
                              ", input 0 is ", dtype_name(in[0].dtype));
    }
    if (!v.rank_known) {
      axis_known = false;
      continue;
    }
    if (static_cast<std::int64_t>(v.shape.size()) != rank) {
      return invalid_argument(node.describe(), ": input ", i, " ", sym_shape_to_string(v.shape),
                              " has rank ", v.shape.size(), ", expected ", rank);
    }
    for (std::int64_t d = 0; d < rank; ++d) {
      const Dim& dim = v.shape[static_cast<std::size_t>(d)];
      Dim& merged = shape[static_cast<std::size_t>(d)];
      if (d == axis) {
        if (dim.is_known()) {
          axis_total += dim.value;
        } else {
          axis_known = false;
        }
      } else if (dim.is_known()) {
        if (merged.is_known() && merged.value != dim.value) {
          return invalid_argument(node.describe(), ": input ", i, " ", sym_shape_to_string(v.shape),
                                  " differs from ", sym_shape_to_string(shape), " in dim ", d);
        }
        merged = dim;
      }
    }
  }
  shape[static_cast<std::size_t>(axis)] = axis_known ? Dim::known(axis_total) : Dim{};
  set_output(out[0], in[0].dtype, shape);
  out[0].data = propagate_concat(in, shape, axis);
  return Status::ok();
}

Status infer_split(const Node& node, std::span<const ValueInfo> in,
                   std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    for (auto& o : out) set_unknown_rank(o, x.dtype);
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  VOXRT_ASSIGN_OR_RETURN(std::int64_t axis,
                         normalize_axis(node, node.attrs.get_int("axis", 0), rank));
  VOXRT_ASSIGN_OR_RETURN(auto split_values, int_values(node, in, 1, "split"));
  const Dim& dim = x.shape[static_cast<std::size_t>(axis)];
  std::vector<Dim> sizes(out.size(), Dim{});
  if (split_values && dim.is_known()) {
    VOXRT_ASSIGN_OR_RETURN(auto chunk, resolve_split(node, dim.value, *split_values));
    for (std::size_t i = 0; i < out.size(); ++i) sizes[i] = Dim::known(chunk[i]);
  } else if (split_values) {
    if (split_values->size() != out.size()) {
      return invalid_argument(node.describe(), ": split has ", split_values->size(), " sizes for ",
                              out.size(), " outputs");
    }
    for (std::size_t i = 0; i < out.size(); ++i) sizes[i] = Dim::known((*split_values)[i]);
  } else if (!has_input(in, 1) && dim.is_known()) {
    VOXRT_ASSIGN_OR_RETURN(auto chunk, resolve_split(node, dim.value, {}));
    for (std::size_t i = 0; i < out.size(); ++i) sizes[i] = Dim::known(chunk[i]);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    SymShape shape = x.shape;
    shape[static_cast<std::size_t>(axis)] = sizes[i];
    set_output(out[i], x.dtype, shape);
  }
  return Status::ok();
}

Status infer_slice(const Node& node, std::span<const ValueInfo> in,
                   std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 3));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(auto starts, int_values(node, in, 1, "starts"));
  VOXRT_ASSIGN_OR_RETURN(auto ends, int_values(node, in, 2, "ends"));
  VOXRT_ASSIGN_OR_RETURN(auto axes, int_values(node, in, 3, "axes"));
  VOXRT_ASSIGN_OR_RETURN(auto steps, int_values(node, in, 4, "steps"));
  const bool axes_ok = !has_input(in, 3) || axes;
  const bool steps_ok = !has_input(in, 4) || steps;
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  if (!starts || !ends || !steps_ok || !axes_ok) {
    // Only the sliced axes become unknown, when we know which they are.
    SymShape shape = x.shape;
    if (axes) {
      for (std::int64_t a : *axes) {
        VOXRT_ASSIGN_OR_RETURN(std::int64_t axis, normalize_axis(node, a, rank));
        shape[static_cast<std::size_t>(axis)] = Dim{};
      }
    } else {
      shape = unknown_dims(x.shape.size());
    }
    set_output(out[0], x.dtype, shape);
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(auto resolved,
                         resolve_slice(node, dims_or_unknown(x.shape), *starts, *ends,
                                       axes ? *axes : std::vector<std::int64_t>{},
                                       steps ? *steps : std::vector<std::int64_t>{}));
  SymShape shape;
  for (std::size_t i = 0; i < resolved.size(); ++i) {
    const SliceAxis& a = resolved[i];
    shape.push_back(a.count >= 0 ? Dim::known(a.count) : a.whole ? x.shape[i] : Dim{});
  }
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_slice(x, shape, resolved);
  return Status::ok();
}

Status infer_gather(const Node& node, std::span<const ValueInfo> in,
                    std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  const ValueInfo& indices = in[1];
  if (indices.dtype != DType::kI64 && indices.dtype != DType::kI32) {
    return invalid_argument(node.describe(), ": indices must be i64 or i32, got ",
                            dtype_name(indices.dtype));
  }
  if (!x.rank_known || !indices.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  if (rank == 0)
    return invalid_argument(node.describe(), ": data must have rank >= 1, got a scalar");
  VOXRT_ASSIGN_OR_RETURN(std::int64_t axis,
                         normalize_axis(node, node.attrs.get_int("axis", 0), rank));
  const Dim& axis_dim = x.shape[static_cast<std::size_t>(axis)];
  if (indices.data && axis_dim.is_known()) {
    for (std::int64_t i = 0; i < indices.data->element_count(); ++i) {
      const std::int64_t index = indices.data->element_as_i64(i);
      if (index < -axis_dim.value || index >= axis_dim.value) {
        return out_of_range(node.describe(), ": index ", index, " is out of range for axis ", axis,
                            " of size ", axis_dim.value);
      }
    }
  }
  SymShape shape(x.shape.begin(), x.shape.begin() + axis);
  shape.insert(shape.end(), indices.shape.begin(), indices.shape.end());
  shape.insert(shape.end(), x.shape.begin() + axis + 1, x.shape.end());
  set_output(out[0], x.dtype, shape);
  out[0].data = propagate_gather(x, indices, shape, axis);
  return Status::ok();
}

Status infer_pad(const Node& node, std::span<const ValueInfo> in,
                 std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  VOXRT_ASSIGN_OR_RETURN(PadMode mode, pad_mode(node));
  if (has_input(in, 2) && in[2].dtype != x.dtype) {
    return invalid_argument(node.describe(), ": constant_value is ", dtype_name(in[2].dtype),
                            ", data is ", dtype_name(x.dtype));
  }
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  const auto rank = static_cast<std::int64_t>(x.shape.size());
  VOXRT_ASSIGN_OR_RETURN(auto pads_values, int_values(node, in, 1, "pads"));
  VOXRT_ASSIGN_OR_RETURN(auto axes_values, int_values(node, in, 3, "axes"));
  if (!pads_values || (has_input(in, 3) && !axes_values)) {
    set_output(out[0], x.dtype, unknown_dims(x.shape.size()));
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(auto pads,
                         resolve_pads(node, rank, *pads_values,
                                      axes_values ? *axes_values : std::vector<std::int64_t>{}));
  SymShape shape;
  for (std::int64_t i = 0; i < rank; ++i) {
    const Dim& d = x.shape[static_cast<std::size_t>(i)];
    const std::int64_t begin = pads[static_cast<std::size_t>(i)];
    const std::int64_t end = pads[static_cast<std::size_t>(i + rank)];
    if (!d.is_known()) {
      shape.push_back(begin == 0 && end == 0 ? d : Dim{});
      continue;
    }
    const std::int64_t size = d.value + begin + end;
    if (size < 0) {
      return invalid_argument(node.describe(), ": pads ", begin, "/", end, " on axis ", i,
                              " of size ", d.value, " give a negative size");
    }
    if (mode != PadMode::kConstant && d.value == 0 && size > 0) {
      return invalid_argument(node.describe(), ": ", mode == PadMode::kEdge ? "edge" : "reflect",
                              " padding of the empty axis ", i);
    }
    shape.push_back(Dim::known(size));
  }
  set_output(out[0], x.dtype, shape);
  return Status::ok();
}

Status infer_shape_op(const Node& node, std::span<const ValueInfo> in,
                      std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_output(out[0], DType::kI64, unknown_dims(1));
    return Status::ok();
  }
  auto [begin, end] = shape_op_range(node, static_cast<std::int64_t>(x.shape.size()));
  set_output(out[0], DType::kI64, {Dim::known(end - begin)});
  std::vector<std::int64_t> values;
  for (std::int64_t i = begin; i < end; ++i) {
    const Dim& d = x.shape[static_cast<std::size_t>(i)];
    if (!d.is_known()) return Status::ok();
    values.push_back(d.value);
  }
  out[0].data = int_tensor(DType::kI64, {end - begin}, values);
  return Status::ok();
}

Status infer_size(const Node& node, std::span<const ValueInfo> in,
                  std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  set_output(out[0], DType::kI64, {});
  if (in[0].rank_known) {
    if (auto dims = known_dims(in[0].shape)) out[0].data = Tensor::scalar_i64(element_count(*dims));
  }
  return Status::ok();
}

Status infer_constant_of_shape(const Node& node, std::span<const ValueInfo> in,
                               std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 1));
  const Tensor* value = node.attrs.get_tensor("value");
  if (value && value->element_count() != 1) {
    return invalid_argument(node.describe(), ": value must hold one element, got ",
                            dims_to_string(value->dims()));
  }
  const DType dtype = value ? value->dtype() : DType::kF32;
  VOXRT_ASSIGN_OR_RETURN(auto dims, int_values(node, in, 0, "shape"));
  if (!dims) {
    const std::int64_t length = known_length(in, 0);
    if (length < 0) {
      set_unknown_rank(out[0], dtype);
    } else {
      set_output(out[0], dtype, unknown_dims(static_cast<std::size_t>(length)));
    }
    return Status::ok();
  }
  for (std::int64_t d : *dims) {
    if (d < 0) {
      return invalid_argument(node.describe(), ": shape ", dims_to_string(*dims),
                              " has a negative dim");
    }
  }
  set_output(out[0], dtype, sym_shape_from_dims(*dims));
  out[0].data = propagate_constant_of_shape(value, dtype, *dims);
  return Status::ok();
}

Status infer_range(const Node& node, std::span<const ValueInfo> in,
                   std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 3));
  const DType dtype = in[0].dtype;
  for (std::size_t i = 0; i < 3; ++i) {
    if (in[i].dtype != dtype ||
        (dtype != DType::kF32 && dtype != DType::kI32 && dtype != DType::kI64)) {
      return invalid_argument(node.describe(),
                              ": start, limit and delta must share one of f32, "
                              "i32, i64; input ",
                              i, " is ", dtype_name(in[i].dtype));
    }
    if (in[i].data && in[i].data->element_count() != 1) {
      return invalid_argument(node.describe(), ": input ", i, " must be a scalar, got ",
                              dims_to_string(in[i].data->dims()));
    }
  }
  if (!in[0].data || !in[1].data || !in[2].data) {
    set_output(out[0], dtype, unknown_dims(1));
    return Status::ok();
  }
  const double start = in[0].data->element_as_double(0);
  const double delta = in[2].data->element_as_double(0);
  VOXRT_ASSIGN_OR_RETURN(std::int64_t count,
                         range_element_count(node, start, in[1].data->element_as_double(0), delta));
  set_output(out[0], dtype, {Dim::known(count)});
  out[0].data = propagate_range(dtype, *in[0].data, *in[2].data, count);
  return Status::ok();
}

Status infer_expand(const Node& node, std::span<const ValueInfo> in,
                    std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  VOXRT_ASSIGN_OR_RETURN(auto target, int_values(node, in, 1, "shape"));
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  if (!target) {
    const std::int64_t length = known_length(in, 1);
    if (length < 0) {
      set_unknown_rank(out[0], x.dtype);
      return Status::ok();
    }
    // An input dim other than 1 survives broadcasting unchanged.
    const std::size_t rank = std::max(x.shape.size(), static_cast<std::size_t>(length));
    SymShape shape = unknown_dims(rank);
    for (std::size_t i = 0; i < x.shape.size(); ++i) {
      const Dim& d = x.shape[i];
      if (d.is_known() && d.value != 1) shape[rank - x.shape.size() + i] = d;
    }
    set_output(out[0], x.dtype, shape);
    return Status::ok();
  }
  for (std::int64_t d : *target) {
    if (d < 0) {
      return invalid_argument(node.describe(), ": shape ", dims_to_string(*target),
                              " has a negative dim");
    }
  }
  VOXRT_ASSIGN_OR_RETURN(SymShape shape,
                         broadcast_shapes(node, x.shape, sym_shape_from_dims(*target)));
  set_output(out[0], x.dtype, shape);
  return Status::ok();
}

Status infer_tile(const Node& node, std::span<const ValueInfo> in,
                  std::vector<InferredOutput>& out) {
  VOXRT_RETURN_IF_ERROR(require_inputs(node, in, 2));
  const ValueInfo& x = in[0];
  if (!x.rank_known) {
    set_unknown_rank(out[0], x.dtype);
    return Status::ok();
  }
  VOXRT_ASSIGN_OR_RETURN(auto repeats, int_values(node, in, 1, "repeats"));
  if (!repeats) {
    set_output(out[0], x.dtype, unknown_dims(x.shape.size()));
    return Status::ok();
  }
  if (repeats->size() != x.shape.size()) {
    return invalid_argument(node.describe(), ": repeats has ", repeats->size(),
                            " values for an input of rank ", x.shape.size());
  }
  SymShape shape;
  for (std::size_t i = 0; i < x.shape.size(); ++i) {
    const std::int64_t r = (*repeats)[i];
    if (r < 0) return invalid_argument(node.describe(), ": repeats[", i, "] = ", r, " is negative");
    const Dim& d = x.shape[i];
    shape.push_back(d.is_known() ? Dim::known(d.value * r)
                    : r == 1     ? d
                    : r == 0     ? Dim::known(0)
                                 : Dim{});
  }
  set_output(out[0], x.dtype, shape);
  return Status::ok();
}

}  // namespace

Status infer_data_movement(const Node& node, std::span<const ValueInfo> inputs,
                           std::vector<InferredOutput>& outputs) {
  if (outputs.empty()) return invalid_argument(node.describe(), ": expected an output");
  switch (node.op) {
    case OpKind::kTranspose: return infer_transpose(node, inputs, outputs);
    case OpKind::kReshape: return infer_reshape(node, inputs, outputs);
    case OpKind::kFlatten: return infer_flatten(node, inputs, outputs);
    case OpKind::kSqueeze: return infer_squeeze(node, inputs, outputs);
    case OpKind::kUnsqueeze: return infer_unsqueeze(node, inputs, outputs);
    case OpKind::kConcat: return infer_concat(node, inputs, outputs);
    case OpKind::kSplit: return infer_split(node, inputs, outputs);
    case OpKind::kSlice: return infer_slice(node, inputs, outputs);
    case OpKind::kGather: return infer_gather(node, inputs, outputs);
    case OpKind::kPad: return infer_pad(node, inputs, outputs);
    case OpKind::kShape: return infer_shape_op(node, inputs, outputs);
    case OpKind::kSize: return infer_size(node, inputs, outputs);
    case OpKind::kConstantOfShape: return infer_constant_of_shape(node, inputs, outputs);
    case OpKind::kRange: return infer_range(node, inputs, outputs);
    case OpKind::kExpand: return infer_expand(node, inputs, outputs);
    case OpKind::kTile: return infer_tile(node, inputs, outputs);
    case OpKind::kScatterND:
    case OpKind::kScatterElements:
    case OpKind::kGatherElements:
    case OpKind::kTrilu: return infer_indexing(node, inputs, outputs);
    default: break;
  }
  return internal_error(node.describe(), ": not a data-movement op");
}

}  // namespace voxrt::ir
