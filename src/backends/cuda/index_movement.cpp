// Index-driven data movement (index_ops.cu): Pad (constant, edge, reflect; negative pads crop),
// Tile, Trilu, and the scatter/gather family (ScatterND, ScatterElements, GatherElements) whose
// indices are data on the device. Pad's operands (pads, the pad value) are read on the host when
// the plan is made, from constants or shape arithmetic (DevTensor::host); Tile's repeats need
// only the output dims; Trilu's k is read on the device.
#include <cstring>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/index_ops.h"
#include "backends/cuda/launch_call.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cuda {
namespace {

Status check_rank(std::size_t rank, const char* what) {
  if (rank > static_cast<std::size_t>(ops::kMaxRank))
    return unsupported(what, " of rank ", rank, " (at most ", ops::kMaxRank, ")");
  return Status::ok();
}

Expected<std::unique_ptr<CudaKernel>> make_pad(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(const ir::PadMode ir_mode, ir::pad_mode(node));
  const ops::PadMode mode = ir_mode == ir::PadMode::kEdge      ? ops::PadMode::kEdge
                            : ir_mode == ir::PadMode::kReflect ? ops::PadMode::kReflect
                                                               : ops::PadMode::kConstant;
  const ir::Node* n = &node;  // the graph outlives the engine's kernels
  const bool pads_attribute = node.opset > 0 && node.opset < 11;
  const bool has_value = node.inputs.size() > 2 && node.input(2);
  const bool has_axes = node.inputs.size() > 3 && node.input(3);
  return make_function_kernel(
      [n, mode, pads_attribute, has_value, has_axes](
          std::span<const DevTensor> inputs,
          std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& x = inputs[0].dims;
        VOXRT_RETURN_IF_ERROR(check_rank(x.size(), "Pad"));
        const auto rank = static_cast<std::int64_t>(x.size());
        std::vector<std::int64_t> raw, axes;
        if (pads_attribute) {
          raw = n->attrs.get_ints("pads", {});
        } else {
          VOXRT_ASSIGN_OR_RETURN(raw, host_ints(inputs, 1, "Pad pads"));
        }
        if (has_axes) {
          VOXRT_ASSIGN_OR_RETURN(axes, host_ints(inputs, 3, "Pad axes"));
        }
        VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t> pads,
                               ir::resolve_pads(*n, rank, raw, axes));
        ops::PadIndex index;
        index.rank = static_cast<int>(rank);
        for (std::int64_t d = 0; d < rank; ++d) {
          const auto du = static_cast<std::size_t>(d);
          index.in_dims[du] = x[du];
          index.out_dims[du] = outputs[0].dims[du];
          index.pad_begin[du] = pads[du];
          if (x[du] + pads[du] + pads[du + x.size()] != outputs[0].dims[du])
            return internal_error(n->describe(), ": output dim ", d, " is ", outputs[0].dims[du],
                                  ", the pads give ", x[du] + pads[du] + pads[du + x.size()]);
        }
        if (element_count(x) == 0 && mode != ops::PadMode::kConstant && outputs[0].count() > 0)
          return invalid_argument(n->describe(), ": edge or reflect padding of an empty tensor");
        std::uint64_t constant = 0;
        const int bytes = static_cast<int>(dtype_size_bytes(inputs[0].dtype));
        if (pads_attribute) {
          const float value = n->attrs.get_float("value", 0.0f);
          if (inputs[0].dtype == DType::kF32) std::memcpy(&constant, &value, 4);
        } else if (has_value) {
          if (!inputs[2].host)
            return unsupported("Pad's constant value must be known when the plan is made");
          if (inputs[2].host->element_count() > 0)
            std::memcpy(&constant, inputs[2].host->raw_data(), static_cast<std::size_t>(bytes));
        }
        return launch_call("Pad", [index, mode, constant, bytes](std::span<const DevTensor> in,
                                                                 std::span<const DevTensor> out,
                                                                 const CudaRunContext& context) {
          return ops::pad(in[0].data, out[0].data, bytes, index, mode, constant, context.stream);
        });
      });
}

Expected<std::unique_ptr<CudaKernel>> make_tile() {
  return make_function_kernel(
      [](std::span<const DevTensor> inputs,
         std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& x = inputs[0].dims;
        VOXRT_RETURN_IF_ERROR(check_rank(x.size(), "Tile"));
        if (outputs[0].dims.size() != x.size())
          return internal_error("Tile output of another rank");
        ops::TileIndex index;
        index.rank = static_cast<int>(x.size());
        for (std::size_t d = 0; d < x.size(); ++d) {
          index.in_dims[d] = x[d];
          index.out_dims[d] = outputs[0].dims[d];
          if (x[d] == 0 && outputs[0].dims[d] != 0) return internal_error("Tile of an empty axis");
        }
        const int bytes = static_cast<int>(dtype_size_bytes(inputs[0].dtype));
        return launch_call(
            "Tile", [index, bytes](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                   const CudaRunContext& context) {
              return ops::tile(in[0].data, out[0].data, bytes, index, context.stream);
            });
      });
}

ops::ScatterReduce reduce_of(const ir::Node& node) {
  const std::string name = node.attrs.get_string("reduction", "none");
  if (name == "add") return ops::ScatterReduce::kAdd;
  if (name == "mul") return ops::ScatterReduce::kMul;
  if (name == "max") return ops::ScatterReduce::kMax;
  if (name == "min") return ops::ScatterReduce::kMin;
  return ops::ScatterReduce::kNone;
}

Expected<std::unique_ptr<CudaKernel>> make_trilu(const ir::Node& node) {
  const bool upper = node.attrs.get_int("upper", 1) != 0;
  const bool has_k = node.inputs.size() > 1 && node.input(1);
  return make_function_kernel(
      [upper, has_k](std::span<const DevTensor> inputs,
                     std::span<const DevTensor>) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& x = inputs[0].dims;
        if (x.size() < 2) return invalid_argument("Trilu input must have rank >= 2");
        const std::int64_t rows = x[x.size() - 2], cols = x.back();
        const std::int64_t matrices = rows * cols == 0 ? 0 : element_count(x) / (rows * cols);
        const int bytes = static_cast<int>(dtype_size_bytes(inputs[0].dtype));
        return launch_call(
            "Trilu", [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                         const CudaRunContext& context) {
              return ops::trilu(in[0].data, out[0].data, bytes, matrices, rows, cols, upper,
                                has_k ? in[1].as<const std::int64_t>() : nullptr, context.stream);
            });
      });
}

// A scatter writes into a copy of its data.
cudaError_t copy_data_first(const DevTensor& data, const DevTensor& out, cudaStream_t stream) {
  if (data.data == out.data || data.bytes() == 0) return cudaSuccess;
  return cudaMemcpyAsync(out.data, data.data, data.bytes(), cudaMemcpyDeviceToDevice, stream);
}

Expected<std::unique_ptr<CudaKernel>> make_scatter_nd(const ir::Node& node) {
  const ops::ScatterReduce reduce = reduce_of(node);
  const ops::ElemType type = *elem_type_of(node.input(0)->dtype);
  const std::string where = node.describe();
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    const Dims& data = inputs[0].dims;
    const Dims& indices = inputs[1].dims;
    if (data.size() > static_cast<std::size_t>(ops::kMaxRank))
      return unsupported(where, ": data of rank ", data.size());
    if (indices.empty()) return invalid_argument(where, ": indices must have rank >= 1");
    const std::int64_t k = indices.back();
    if (k < 1 || k > static_cast<std::int64_t>(data.size()))
      return invalid_argument(where, ": indices ", dims_to_string(indices), " index ", k,
                              " dims of data ", dims_to_string(data));
    ops::ScatterNdIndex index;
    index.k = static_cast<int>(k);
    const Dims strides = row_major_strides(data);
    for (std::size_t d = 0; d < data.size(); ++d) {
      index.data_dims[d] = data[d];
      index.data_strides[d] = strides[d];
    }
    index.slice = k == static_cast<std::int64_t>(data.size()) ? 1 : strides[k - 1];
    index.tuples = element_count(indices) / k;
    if (inputs[2].count() != index.tuples * index.slice)
      return invalid_argument(where, ": updates ", dims_to_string(inputs[2].dims), " hold ",
                              inputs[2].count(), " elements, expected ",
                              index.tuples * index.slice);
    const bool i32 = inputs[1].dtype == DType::kI32;
    return launch_call("ScatterND", [=](std::span<const DevTensor> in,
                                        std::span<const DevTensor> out,
                                        const CudaRunContext& context) {
      if (const cudaError_t e = copy_data_first(in[0], out[0], context.stream); e != cudaSuccess)
        return e;
      return ops::scatter_nd(type, in[2].data, in[1].data, i32, out[0].data, index, reduce,
                             context.stream);
    });
  });
}

// ScatterElements (scatter) and GatherElements.
Expected<std::unique_ptr<CudaKernel>> make_elements(const ir::Node& node, bool scatter) {
  const ops::ScatterReduce reduce = reduce_of(node);
  const ops::ElemType type = *elem_type_of(node.input(0)->dtype);
  const std::int64_t axis_attr = node.attrs.get_int("axis", 0);
  const std::string where = node.describe();
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    const Dims& data = inputs[0].dims;
    const Dims& indices = inputs[1].dims;
    const auto rank = static_cast<std::int64_t>(data.size());
    if (rank > ops::kMaxRank) return unsupported(where, ": data of rank ", rank);
    if (indices.size() != data.size())
      return invalid_argument(where, ": indices ", dims_to_string(indices),
                              " must have the rank of data ", dims_to_string(data));
    if (axis_attr < -rank || axis_attr >= rank)
      return invalid_argument(where, ": axis ", axis_attr, " is out of range for rank ", rank);
    ops::ElementsIndex index;
    index.rank = static_cast<int>(rank);
    index.axis = static_cast<int>(axis_attr < 0 ? axis_attr + rank : axis_attr);
    const Dims strides = row_major_strides(data);
    for (std::size_t d = 0; d < data.size(); ++d) {
      if (static_cast<int>(d) != index.axis && indices[d] > data[d])
        return invalid_argument(where, ": indices ", dims_to_string(indices), " exceed data ",
                                dims_to_string(data), " in dim ", d);
      index.index_dims[d] = indices[d];
      index.data_dims[d] = data[d];
      index.data_strides[d] = strides[d];
    }
    if (scatter && inputs[2].dims != indices)
      return invalid_argument(where, ": updates ", dims_to_string(inputs[2].dims),
                              " must have the shape of indices ", dims_to_string(indices));
    const bool i32 = inputs[1].dtype == DType::kI32;
    const int bytes = static_cast<int>(dtype_size_bytes(inputs[0].dtype));
    if (scatter)
      return launch_call("ScatterElements", [=](std::span<const DevTensor> in,
                                                std::span<const DevTensor> out,
                                                const CudaRunContext& context) {
        if (const cudaError_t e = copy_data_first(in[0], out[0], context.stream); e != cudaSuccess)
          return e;
        return ops::scatter_elements(type, in[2].data, in[1].data, i32, out[0].data, index, reduce,
                                     context.stream);
      });
    return launch_call("GatherElements",
                       [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                           const CudaRunContext& context) {
                         return ops::gather_elements(bytes, in[0].data, in[1].data, i32,
                                                     out[0].data, index, context.stream);
                       });
  });
}

}  // namespace

std::string index_movement_unsupported(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kPad: {
      if (!ir::pad_mode(node)) return "unknown Pad mode";
      return {};
    }
    case ir::OpKind::kTile: return {};
    case ir::OpKind::kTrilu:
      if (node.inputs.size() > 1 && node.input(1) && node.input(1)->dtype != DType::kI64)
        return "Trilu's k must be i64";
      return {};
    case ir::OpKind::kScatterND:
    case ir::OpKind::kScatterElements:
    case ir::OpKind::kGatherElements: {
      const bool scatter = node.op != ir::OpKind::kGatherElements;
      if (node.inputs.size() < (scatter ? 3u : 2u) || !node.input(0) || !node.input(1) ||
          (scatter && !node.input(2)))
        return str_cat(ir::op_name(node.op), " needs data, indices", scatter ? " and updates" : "");
      const DType indices = node.input(1)->dtype;
      if (indices != DType::kI64 && indices != DType::kI32)
        return str_cat("indices must be i64 or i32, found ", dtype_name(indices));
      const auto type = elem_type_of(node.input(0)->dtype);
      if (!type) return str_cat("no CUDA kernel for ", dtype_name(node.input(0)->dtype));
      if (scatter && !ops::scatter_reduce_takes(reduce_of(node), *type))
        return str_cat("a scatter reduction on ", dtype_name(node.input(0)->dtype),
                       " (f32, i32 and i64 only)");
      return {};
    }
    default: break;
  }
  return str_cat("no CUDA kernel for ", ir::op_name(node.op));
}

Expected<std::unique_ptr<CudaKernel>> make_index_movement_kernel(const ir::Node& node) {
  const std::string why = index_movement_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (node.op) {
    case ir::OpKind::kPad: return make_pad(node);
    case ir::OpKind::kTrilu: return make_trilu(node);
    case ir::OpKind::kScatterND: return make_scatter_nd(node);
    case ir::OpKind::kScatterElements: return make_elements(node, true);
    case ir::OpKind::kGatherElements: return make_elements(node, false);
    default: return make_tile();
  }
}

}  // namespace voxrt::backends::cuda
