// Data movement on the device: Transpose, Slice, Concat, Split, Gather, Expand, as strided copies
// (one generic kernel) and a gather kernel. Shape ops (Shape, Range, ...) must have been folded
// by the builder's passes; views (Reshape, Squeeze, ...) are aliases in the executor.
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

class SliceKernel final : public CudaKernel {
 public:
  SliceKernel(std::vector<std::int64_t> starts, std::vector<std::int64_t> axes,
              std::vector<std::int64_t> steps)
      : starts_(std::move(starts)), axes_(std::move(axes)), steps_(std::move(steps)) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    VOXRT_RETURN_IF_ERROR(check_rank(in[0].dims.size()));
    CopyCall::Copy c;
    c.copy = slice_copy(in[0].dims, out[0].dims, starts_, axes_, steps_);
    return make_copy_call({c});
  }
  std::optional<std::int64_t> aliases_input(const Dims& in, const Dims& out) const override {
    if (in.size() > static_cast<std::size_t>(ops::kMaxRank)) return std::nullopt;
    return contiguous_source_offset(slice_copy(in, out, starts_, axes_, steps_));
  }

 private:
  std::vector<std::int64_t> starts_, axes_, steps_;
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
             std::int64_t count, std::int64_t inner)
      : indices_(constant_indices),
        outer_(outer),
        axis_size_(axis_size),
        count_(count),
        inner_(inner) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const auto* indices = indices_ ? indices_ : in[1].as<const std::int64_t>();
    VOXRT_CUDA_TRY(ops::gather(in[0].data, indices, out[0].data,
                               static_cast<int>(dtype_size_bytes(in[0].dtype)), outer_, axis_size_,
                               count_, inner_, context.stream));
    return Status::ok();
  }

 private:
  const std::int64_t* indices_;
  std::int64_t outer_, axis_size_, count_, inner_;
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
    return std::unique_ptr<CudaCall>(
        new GatherCall(indices_, outer, id[axis], in[1].count(), inner));
  }

 private:
  std::int64_t axis_;
  const std::int64_t* indices_;
};

std::vector<std::int64_t> constant_ints(const ir::Value* v) {
  return v && v->is_constant() ? v->constant->to_i64_vector() : std::vector<std::int64_t>{};
}

}  // namespace

std::string data_movement_unsupported(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kTranspose:
    case ir::OpKind::kConcat:
    case ir::OpKind::kExpand: break;
    case ir::OpKind::kSplit:
      for (std::size_t i = 0; i < node.outputs.size(); ++i) {
        if (!node.output(i)) return "Split with an omitted output is not supported";
      }
      break;
    case ir::OpKind::kSlice:
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (node.input(i) && !node.input(i)->is_constant())
          return "Slice starts/ends/axes/steps must be constants on the CUDA backend";
      }
      break;
    case ir::OpKind::kGather: {
      const ir::Value* indices = node.input(1);
      if (!indices) return "Gather needs indices";
      if (!indices->is_constant() && indices->dtype != DType::kI64)
        return "Gather with computed indices needs i64 indices on the CUDA backend";
      break;
    }
    default:
      return str_cat("no CUDA kernel for ", ir::op_name(node.op),
                     " (shape computations must fold at build time: give fixed profiles)");
  }
  if (node.op == ir::OpKind::kSplit && node.inputs.size() > 1 && node.input(1) &&
      !node.input(1)->is_constant())
    return "Split sizes must be constants on the CUDA backend";
  if (node.op == ir::OpKind::kExpand && node.input(1) && !node.input(1)->is_constant())
    return "Expand shape must be a constant on the CUDA backend";
  return {};
}

Expected<std::unique_ptr<CudaKernel>> make_data_movement_kernel(const ir::Node& node,
                                                                KernelBuildContext& build) {
  const std::string why = data_movement_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (node.op) {
    case ir::OpKind::kTranspose:
      return std::unique_ptr<CudaKernel>(new TransposeKernel(node.attrs.get_ints("perm", {})));
    case ir::OpKind::kSlice: {
      std::vector<std::int64_t> starts, axes, steps;
      if (node.opset > 0 && node.opset < 10) {
        starts = node.attrs.get_ints("starts", {});
        axes = node.attrs.get_ints("axes", {});
      } else {
        starts = constant_ints(node.input(1));
        axes = constant_ints(node.input(3));
        steps = constant_ints(node.input(4));
      }
      return std::unique_ptr<CudaKernel>(
          new SliceKernel(std::move(starts), std::move(axes), std::move(steps)));
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
