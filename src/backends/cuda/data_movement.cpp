// Data movement on the device: Transpose, Slice, Concat, Split, Gather, Expand, as strided copies
// (one generic kernel) and a gather kernel. Operands that shape the copy (Slice starts, axes and
// steps) are read on the host when the plan is made: constants, or shape arithmetic the executor
// computed from dims (DevTensor::host). Views (Reshape, Squeeze, ...) are aliases in the
// executor; the shape ops are in shape_ops.cpp, Pad and Tile in index_movement.cpp.
#include <algorithm>
#include <numeric>

#include "backends/cuda/copy_plan.h"
#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {
namespace {

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

Status check_rank(std::size_t rank) {
  if (rank > static_cast<std::size_t>(ops::kMaxRank))
    return unsupported("rank ", rank, " (the CUDA data-movement kernels take at most ",
                       ops::kMaxRank, ")");
  return Status::ok();
}

// A list of strided copies, enqueued in order.
class CopyCall final : public CudaCall {
 public:
  struct Copy {
    int input = 0, output = 0;
    ops::StridedCopy copy;
  };
  explicit CopyCall(std::vector<Copy> copies) : copies_(std::move(copies)) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    for (const Copy& c : copies_) {
      const DevTensor& src = in[static_cast<std::size_t>(c.input)];
      const DevTensor& dst = out[static_cast<std::size_t>(c.output)];
      VOXRT_CUDA_TRY(ops::strided_copy(src.data, dst.data,
                                       static_cast<int>(dtype_size_bytes(src.dtype)), c.copy,
                                       context.stream));
    }
    return Status::ok();
  }

 private:
  std::vector<Copy> copies_;
};

Expected<std::unique_ptr<CudaCall>> make_copy_call(std::vector<CopyCall::Copy> copies) {
  return std::unique_ptr<CudaCall>(new CopyCall(std::move(copies)));
}

class TransposeKernel final : public CudaKernel {
 public:
  explicit TransposeKernel(std::vector<std::int64_t> perm) : perm_(std::move(perm)) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    VOXRT_RETURN_IF_ERROR(check_rank(in[0].dims.size()));
    CopyCall::Copy c;
    c.copy = transpose_copy(in[0].dims, out[0].dims, perm_);
    return make_copy_call({c});
  }

 private:
  std::vector<std::int64_t> perm_;
};

// Slice: opset < 10 takes starts and axes as attributes; later ones as inputs 1 (starts), 3
// (axes) and 4 (steps), read on the host (the ends only decide the output dims).
class SliceKernel final : public CudaKernel {
 public:
  // has_axes / has_steps: the node has those inputs (at prepare time an omitted input and one
  // computed on the device look alike: no host contents).
  SliceKernel(bool from_attributes, std::vector<std::int64_t> starts,
              std::vector<std::int64_t> axes, bool has_axes, bool has_steps)
      : from_attributes_(from_attributes),
        starts_(std::move(starts)),
        axes_(std::move(axes)),
        has_axes_(has_axes),
        has_steps_(has_steps) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    VOXRT_RETURN_IF_ERROR(check_rank(in[0].dims.size()));
    VOXRT_ASSIGN_OR_RETURN(const Operands o, operands(in));
    CopyCall::Copy c;
    c.copy = slice_copy(in[0].dims, out[0].dims, o.starts, o.axes, o.steps);
    return make_copy_call({c});
  }
  std::optional<std::int64_t> aliases_input(std::span<const DevTensor> in,
                                            const Dims& out) const override {
    if (in[0].dims.size() > static_cast<std::size_t>(ops::kMaxRank)) return std::nullopt;
    auto o = operands(in);
    if (!o) return std::nullopt;
    return contiguous_source_offset(slice_copy(in[0].dims, out, o->starts, o->axes, o->steps));
  }

 private:
  struct Operands {
    std::vector<std::int64_t> starts, axes, steps;
  };
  Expected<Operands> operands(std::span<const DevTensor> in) const {
    if (from_attributes_) return Operands{starts_, axes_, {}};
    Operands o;
    VOXRT_ASSIGN_OR_RETURN(o.starts, host_ints(in, 1, "Slice starts"));
    if (has_axes_) {
      VOXRT_ASSIGN_OR_RETURN(o.axes, host_ints(in, 3, "Slice axes"));
    }
    if (has_steps_) {
      VOXRT_ASSIGN_OR_RETURN(o.steps, host_ints(in, 4, "Slice steps"));
    }
    return o;
  }

  bool from_attributes_;
  std::vector<std::int64_t> starts_, axes_;
  bool has_axes_, has_steps_;
};

// Concat (inputs into one output) and Split (one input into outputs) along `axis`. prepare()
// runs before the executor has placed the arena, so device pointers are null there and must not
// be looked at (a `!part.data` test here once skipped every Split output: nothing was written).
class ConcatSplitKernel final : public CudaKernel {
 public:
  ConcatSplitKernel(bool concat, std::int64_t axis) : concat_(concat), axis_(axis) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    const Dims& whole = concat_ ? out[0].dims : in[0].dims;
    VOXRT_RETURN_IF_ERROR(check_rank(whole.size()));
    const std::span<const DevTensor> part_tensors = concat_ ? in : out;
    std::vector<Dims> parts;
    for (const DevTensor& part : part_tensors) {
      // An omitted part (DevTensor{}) has no dims; data_movement_unsupported() refuses those.
      if (part.dims.size() != whole.size())
        return internal_error(concat_ ? "Concat" : "Split", " part of rank ", part.dims.size(),
                              ", the whole has rank ", whole.size());
      parts.push_back(part.dims);
    }
    std::vector<CopyCall::Copy> copies;
    for (const PartCopy& pc : concat_split_copies(concat_, whole, parts, axis_)) {
      CopyCall::Copy c;
      c.input = concat_ ? static_cast<int>(pc.part) : 0;
      c.output = concat_ ? 0 : static_cast<int>(pc.part);
      c.copy = pc.copy;
      copies.push_back(c);
    }
    return make_copy_call(std::move(copies));
  }
  std::optional<std::vector<std::int64_t>> places_inputs_in_output(std::span<const Dims> in,
                                                                   const Dims& out) const override {
    if (!concat_) return std::nullopt;
    for (const Dims& part : in)
      if (part.size() != out.size()) return std::nullopt;
    return concat_parts_in_place(out, in, axis_);
  }

 private:
  bool concat_;
  std::int64_t axis_;
};

class ExpandKernel final : public CudaKernel {
 public:
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    VOXRT_RETURN_IF_ERROR(check_rank(out[0].dims.size()));
    CopyCall::Copy c;
    c.copy = expand_copy(in[0].dims, out[0].dims);
    return make_copy_call({c});
  }
};

class GatherCall final : public CudaCall {
 public:
  GatherCall(const std::int64_t* constant_indices, std::int64_t outer, std::int64_t axis_size,
             std::int64_t count, std::int64_t inner, bool widen_indices)
      : indices_(constant_indices),
        outer_(outer),
        axis_size_(axis_size),
        count_(count),
        inner_(inner),
        widen_(widen_indices) {}
  std::size_t scratch_bytes() const override {
    return widen_ ? align_up(static_cast<std::size_t>(count_) * 8) : 0;
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const auto* indices = indices_ ? indices_ : in[1].as<const std::int64_t>();
    if (widen_) {  // i32 indices computed on the device: to i64 in scratch first
      VOXRT_CUDA_TRY(ops::cast(ops::ElemType::kI32, ops::ElemType::kI64, in[1].data,
                               context.scratch, count_, context.stream));
      indices = static_cast<const std::int64_t*>(context.scratch);
    }
    VOXRT_CUDA_TRY(ops::gather(in[0].data, indices, out[0].data,
                               static_cast<int>(dtype_size_bytes(in[0].dtype)), outer_, axis_size_,
                               count_, inner_, context.stream));
    return Status::ok();
  }

 private:
  const std::int64_t* indices_;
  std::int64_t outer_, axis_size_, count_, inner_;
  bool widen_;
};

class GatherKernel final : public CudaKernel {
 public:
  GatherKernel(std::int64_t axis, const std::int64_t* constant_indices)
      : axis_(axis), indices_(constant_indices) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    const Dims& id = in[0].dims;
    const auto axis = static_cast<std::size_t>(normalize_axis(axis_, id.size()));
    std::int64_t outer = 1, inner = 1;
    for (std::size_t d = 0; d < axis; ++d) outer *= id[d];
    for (std::size_t d = axis + 1; d < id.size(); ++d) inner *= id[d];
    return std::unique_ptr<CudaCall>(new GatherCall(indices_, outer, id[axis], in[1].count(), inner,
                                                    !indices_ && in[1].dtype == DType::kI32));
  }

 private:
  std::int64_t axis_;
  const std::int64_t* indices_;
};

}  // namespace

Expected<std::vector<std::int64_t>> host_ints(std::span<const DevTensor> in, std::size_t i,
                                              const char* what) {
  if (i >= in.size() || !in[i].host)
    return unsupported(what,
                       " must be known when the plan is made (constants, or shape "
                       "arithmetic on dims); here they are computed on the device");
  return in[i].host->to_i64_vector();
}

std::string data_movement_unsupported(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kTranspose:
    case ir::OpKind::kConcat:
    case ir::OpKind::kExpand:  // the output dims alone shape the copy
    case ir::OpKind::kSlice: break;
    case ir::OpKind::kSplit:
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        if (!node.output(i)) return "Split with an omitted output is not supported";
      }
      break;
    case ir::OpKind::kGather: {
      const ir::Value* indices = node.input(1);
      if (!indices) return "Gather needs indices";
      if (!indices->is_constant() && indices->dtype != DType::kI64 && indices->dtype != DType::kI32)
        return "Gather indices must be i64 or i32";
      break;
    }
    case ir::OpKind::kShape:
    case ir::OpKind::kSize:
    case ir::OpKind::kConstantOfShape:
    case ir::OpKind::kRange: return shape_op_unsupported(node);
    case ir::OpKind::kPad:
    case ir::OpKind::kTile:
    case ir::OpKind::kTrilu:
    case ir::OpKind::kScatterND:
    case ir::OpKind::kScatterElements:
    case ir::OpKind::kGatherElements: return index_movement_unsupported(node);
    default: return str_cat("no CUDA kernel for ", ir::op_name(node.op));
  }
  return {};
}

Expected<std::unique_ptr<CudaKernel>> make_data_movement_kernel(const ir::Node& node,
                                                                KernelBuildContext& build) {
  const std::string why = data_movement_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (node.op) {
    case ir::OpKind::kShape:
    case ir::OpKind::kSize:
    case ir::OpKind::kConstantOfShape:
    case ir::OpKind::kRange: return make_shape_op_kernel(node);
    case ir::OpKind::kPad:
    case ir::OpKind::kTile:
    case ir::OpKind::kTrilu:
    case ir::OpKind::kScatterND:
    case ir::OpKind::kScatterElements:
    case ir::OpKind::kGatherElements: return make_index_movement_kernel(node);
    case ir::OpKind::kTranspose:
      return std::unique_ptr<CudaKernel>(new TransposeKernel(node.attrs.get_ints("perm", {})));
    case ir::OpKind::kSlice: {
      const bool from_attributes = node.opset > 0 && node.opset < 10;
      return std::unique_ptr<CudaKernel>(new SliceKernel(
          from_attributes, node.attrs.get_ints("starts", {}), node.attrs.get_ints("axes", {}),
          node.inputs.size() > 3 && node.input(3), node.inputs.size() > 4 && node.input(4)));
    }
    case ir::OpKind::kConcat:
      return std::unique_ptr<CudaKernel>(
          new ConcatSplitKernel(true, node.attrs.get_int("axis", 0)));
    case ir::OpKind::kSplit:
      return std::unique_ptr<CudaKernel>(
          new ConcatSplitKernel(false, node.attrs.get_int("axis", 0)));
    case ir::OpKind::kExpand: return std::unique_ptr<CudaKernel>(new ExpandKernel());
    case ir::OpKind::kGather: {
      const std::int64_t* indices = nullptr;
      if (node.input(1)->is_constant()) {
        const auto values = node.input(1)->constant->to_i64_vector();
        VOXRT_ASSIGN_OR_RETURN(void* device, build.upload_bytes(values.data(), values.size() * 8));
        indices = static_cast<const std::int64_t*>(device);
      }
      return std::unique_ptr<CudaKernel>(new GatherKernel(node.attrs.get_int("axis", 0), indices));
    }
    default: break;
  }
  return unsupported(node.describe(), ": no CUDA kernel");
}

}  // namespace voxrt::backends::cuda
