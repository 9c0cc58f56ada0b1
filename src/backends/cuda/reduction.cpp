// Softmax / LogSoftmax, LayerNormalization and the reductions on the device. ReduceSum/Mean/Max/
// Min of f32 reduce in f32 (pool_reduce_ops.cu); the other reductions, other element types and
// ArgMax take the typed kernel (typed_reduce.cu, the CPU reference's accumulation rules).
#include <algorithm>
#include <optional>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/launch_call.h"

namespace voxrt::backends::cuda {
namespace {

std::int64_t product(const Dims& dims, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

class SoftmaxCall final : public CudaCall {
 public:
  SoftmaxCall(std::int64_t outer, std::int64_t axis, std::int64_t inner, bool log)
      : outer_(outer), axis_(axis), inner_(inner), log_(log) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(ops::softmax(in[0].as<const float>(), out[0].as<float>(), outer_, axis_, inner_,
                                log_, context.stream));
    return Status::ok();
  }

 private:
  std::int64_t outer_, axis_, inner_;
  bool log_;
};

class SoftmaxKernel final : public CudaKernel {
 public:
  SoftmaxKernel(std::int64_t axis, bool coerce_2d, bool log)
      : axis_(axis), coerce_2d_(coerce_2d), log_(log) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    const Dims& d = in[0].dims;
    const std::int64_t rank = static_cast<std::int64_t>(d.size());
    const std::int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= std::max<std::int64_t>(rank, 1))
      return invalid_argument("softmax axis ", axis_, " out of range for rank ", rank);
    const auto a = static_cast<std::size_t>(axis);
    if (coerce_2d_) {  // opset < 13: [prod(:axis), prod(axis:)]
      return std::unique_ptr<CudaCall>(
          new SoftmaxCall(product(d, 0, a), product(d, a, d.size()), 1, log_));
    }
    return std::unique_ptr<CudaCall>(
        new SoftmaxCall(product(d, 0, a), d.empty() ? 1 : d[a], product(d, a + 1, d.size()), log_));
  }

 private:
  std::int64_t axis_;
  bool coerce_2d_, log_;
};

class LayerNormCall final : public CudaCall {
 public:
  // `broadcast_scale` / `broadcast_bias`: a one-element scale or bias (a LayerNorm recognised
  // from a graph that scales by a scalar), written out to `cols` values in scratch each call.
  LayerNormCall(std::int64_t rows, std::int64_t cols, float epsilon, bool broadcast_scale,
                bool broadcast_bias)
      : rows_(rows), cols_(cols), epsilon_(epsilon), broadcast_{broadcast_scale, broadcast_bias} {}
  std::size_t scratch_bytes() const override {
    const std::size_t row = align_up(static_cast<std::size_t>(cols_) * sizeof(float));
    return (broadcast_[0] ? row : 0) + (broadcast_[1] ? row : 0);
  }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const float* params[2] = {in[1].as<const float>(),
                              in.size() > 2 ? in[2].as<const float>() : nullptr};
    char* scratch = static_cast<char*>(context.scratch);
    for (int i = 0; i < 2; ++i) {
      if (!broadcast_[i] || !params[i]) continue;
      ops::StridedCopy copy;
      copy.rank = 1;
      copy.dims[0] = cols_;
      copy.in_strides[0] = 0;
      copy.out_strides[0] = 1;
      VOXRT_CUDA_TRY(ops::strided_copy(params[i], scratch, sizeof(float), copy, context.stream));
      params[i] = reinterpret_cast<const float*>(scratch);
      scratch += align_up(static_cast<std::size_t>(cols_) * sizeof(float));
    }
    VOXRT_CUDA_TRY(ops::layer_norm(in[0].as<const float>(), params[0], params[1],
                                   out[0].as<float>(), rows_, cols_, epsilon_, context.stream));
    return Status::ok();
  }

 private:
  std::int64_t rows_, cols_;
  float epsilon_;
  bool broadcast_[2];
};

class LayerNormKernel final : public CudaKernel {
 public:
  LayerNormKernel(std::int64_t axis, float epsilon) : axis_(axis), epsilon_(epsilon) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    const Dims& d = in[0].dims;
    const std::int64_t rank = static_cast<std::int64_t>(d.size());
    const std::int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
    if (axis < 0 || axis >= rank) return invalid_argument("LayerNormalization axis out of range");
    const auto a = static_cast<std::size_t>(axis);
    const std::int64_t cols = product(d, a, d.size());
    const bool has_bias = in.size() > 2 && in[2].data;
    const std::int64_t scale_count = in[1].count();
    const std::int64_t bias_count = has_bias ? in[2].count() : cols;
    if ((scale_count != cols && scale_count != 1) || (bias_count != cols && bias_count != 1)) {
      return unsupported("LayerNormalization scale/bias of ", scale_count, "/", bias_count,
                         " elements: expected ", cols, " or 1 (the normalised axes' size)");
    }
    return std::unique_ptr<CudaCall>(new LayerNormCall(product(d, 0, a), cols, epsilon_,
                                                       scale_count != cols, bias_count != cols));
  }

 private:
  std::int64_t axis_;
  float epsilon_;
};

// Reductions over axes that are adjacent once sorted (all axes, the last ones, one axis...): x is
// then [outer, extent, inner] and keepdims changes nothing in memory. The axes come from the
// attribute (opset < 18 ReduceSum < 13), or from input 1 read on the host at prepare time.
struct ReduceInfo {
  ops::ReduceOp op = ops::ReduceOp::kSum;
  // Set when the typed kernel runs it (another op or element type than the f32 kernel takes).
  std::optional<ops::TypedReduceOp> typed;
  ops::ElemType type = ops::ElemType::kF32;
  bool has_axes = false;  // absent: every axis (or nothing with noop_with_empty_axes)
  bool axes_from_input = false;
  std::vector<std::int64_t> axes;
  bool noop_with_empty_axes = false;
};

std::optional<ops::ReduceOp> reduce_op_of(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kReduceSum: return ops::ReduceOp::kSum;
    case ir::OpKind::kReduceMean: return ops::ReduceOp::kMean;
    case ir::OpKind::kReduceMax: return ops::ReduceOp::kMax;
    case ir::OpKind::kReduceMin: return ops::ReduceOp::kMin;
    default: return std::nullopt;
  }
}

class ReduceCall final : public CudaCall {
 public:
  ReduceCall(const ReduceInfo& info, std::int64_t outer, std::int64_t extent, std::int64_t inner,
             bool copy)
      : op_(info.op),
        typed_(info.typed),
        type_(info.type),
        outer_(outer),
        extent_(extent),
        inner_(inner),
        copy_(copy) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    if (copy_) {  // noop_with_empty_axes: the input as it is
      VOXRT_CUDA_TRY(cudaMemcpyAsync(out[0].data, in[0].data, in[0].bytes(),
                                     cudaMemcpyDeviceToDevice, context.stream));
      return Status::ok();
    }
    if (typed_) {
      VOXRT_CUDA_TRY(ops::typed_reduce(*typed_, type_, in[0].data, out[0].data, outer_, extent_,
                                       inner_, false, context.stream));
      return Status::ok();
    }
    VOXRT_CUDA_TRY(ops::reduce(op_, in[0].as<const float>(), out[0].as<float>(), outer_, extent_,
                               inner_, context.stream));
    return Status::ok();
  }

 private:
  ops::ReduceOp op_;
  std::optional<ops::TypedReduceOp> typed_;
  ops::ElemType type_;
  std::int64_t outer_, extent_, inner_;
  bool copy_;
};

class ReduceKernel final : public CudaKernel {
 public:
  ReduceKernel(std::string where, ReduceInfo info) : where_(std::move(where)), info_(info) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    const Dims& d = in[0].dims;
    const auto rank = static_cast<std::int64_t>(d.size());
    std::vector<std::int64_t> axes = info_.axes;
    if (info_.axes_from_input) {
      VOXRT_ASSIGN_OR_RETURN(axes, host_ints(in, 1, "reduction axes"));
    }
    if (info_.has_axes && axes.empty() && info_.noop_with_empty_axes)
      return std::unique_ptr<CudaCall>(new ReduceCall(info_, 0, 0, 0, true));
    std::vector<bool> reduced(d.size(), !info_.has_axes || axes.empty());
    for (std::int64_t axis : axes) {
      const std::int64_t a = axis < 0 ? axis + rank : axis;
      if (a < 0 || a >= rank)
        return invalid_argument(where_, ": axis ", axis, " out of range for rank ", rank);
      reduced[static_cast<std::size_t>(a)] = true;
    }
    std::size_t first = d.size(), last = 0;
    for (std::size_t a = 0; a < d.size(); ++a) {
      if (!reduced[a]) continue;
      first = std::min(first, a);
      last = a;
    }
    if (first == d.size())  // a scalar input: nothing to reduce over
      return std::unique_ptr<CudaCall>(new ReduceCall(info_, 1, 1, 1, false));
    for (std::size_t a = first; a <= last; ++a) {
      if (!reduced[a])
        return unsupported(where_, ": the CUDA backend reduces over adjacent axes only");
    }
    return std::unique_ptr<CudaCall>(new ReduceCall(info_, product(d, 0, first),
                                                    product(d, first, last + 1),
                                                    product(d, last + 1, d.size()), false));
  }

 private:
  std::string where_;
  ReduceInfo info_;
};

std::optional<ops::TypedReduceOp> typed_reduce_op_of(ir::OpKind op) {
  switch (op) {
    case ir::OpKind::kReduceSum: return ops::TypedReduceOp::kSum;
    case ir::OpKind::kReduceMean: return ops::TypedReduceOp::kMean;
    case ir::OpKind::kReduceMax: return ops::TypedReduceOp::kMax;
    case ir::OpKind::kReduceMin: return ops::TypedReduceOp::kMin;
    case ir::OpKind::kReduceProd: return ops::TypedReduceOp::kProd;
    case ir::OpKind::kReduceL2: return ops::TypedReduceOp::kL2;
    case ir::OpKind::kReduceSumSquare: return ops::TypedReduceOp::kSumSquare;
    case ir::OpKind::kReduceLogSumExp: return ops::TypedReduceOp::kLogSumExp;
    case ir::OpKind::kArgMax: return ops::TypedReduceOp::kArgMax;
    default: return std::nullopt;
  }
}

// ArgMax over one axis (keepdims changes nothing in memory): [outer, extent, inner] -> i64.
Expected<std::unique_ptr<CudaKernel>> make_arg_max_kernel(const ir::Node& node) {
  const ops::ElemType type = *elem_type_of(node.input(0)->dtype);
  const std::int64_t axis = node.attrs.get_int("axis", 0);
  const bool select_last = node.attrs.get_int("select_last_index", 0) != 0;
  return make_function_kernel(
      [type, axis, select_last](std::span<const DevTensor> inputs,
                                std::span<const DevTensor>) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& d = inputs[0].dims;
        const auto rank = static_cast<std::int64_t>(d.size());
        const std::int64_t a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) return invalid_argument("ArgMax axis ", axis, " out of range");
        const auto au = static_cast<std::size_t>(a);
        const std::int64_t outer = product(d, 0, au), extent = d[au],
                           inner = product(d, au + 1, d.size());
        if (extent == 0 && outer * inner > 0) return invalid_argument("ArgMax over an empty axis");
        return launch_call(
            "ArgMax", [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                          const CudaRunContext& context) {
              return ops::typed_reduce(ops::TypedReduceOp::kArgMax, type, in[0].data, out[0].data,
                                       outer, extent, inner, select_last, context.stream);
            });
      });
}

}  // namespace

std::string reduction_unsupported(const ir::Node& node) {
  if (node.op == ir::OpKind::kCumSum || node.op == ir::OpKind::kTopK ||
      node.op == ir::OpKind::kInstanceNormalization)
    return scan_norm_unsupported(node);
  if (auto op = typed_reduce_op_of(node.op)) {
    const ir::Value* x = node.input(0);
    const auto type = x ? elem_type_of(x->dtype) : std::nullopt;
    if (!type || !node.output(0)) return "needs an input and an output";
    if (!ops::typed_reduce_takes(*op, *type))
      return str_cat(ir::op_name(node.op), " of ", dtype_name(x->dtype),
                     " is not taken on the CUDA backend");
    const DType out = *op == ops::TypedReduceOp::kArgMax ? DType::kI64 : x->dtype;
    if (node.output(0)->dtype != out)
      return str_cat("the output must be ", dtype_name(out), ", found ",
                     dtype_name(node.output(0)->dtype));
    return {};
  }
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value* v = node.inputs[i];
    if (v && v->dtype != DType::kF32) return "f32 only on the CUDA backend";
  }
  switch (node.op) {
    case ir::OpKind::kSoftmax:
    case ir::OpKind::kLogSoftmax: return {};
    case ir::OpKind::kLayerNormalization:
      if (node.output(1) || node.output(2))
        return "the Mean/InvStdDev outputs are not produced on the CUDA backend";
      if (!node.input(1)) return "needs a scale input";
      return {};
    default: return str_cat("no CUDA kernel for ", ir::op_name(node.op));
  }
}

Expected<std::unique_ptr<CudaKernel>> make_reduction_kernel(const ir::Node& node,
                                                            KernelBuildContext&) {
  const std::string why = reduction_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  if (node.op == ir::OpKind::kCumSum || node.op == ir::OpKind::kTopK ||
      node.op == ir::OpKind::kInstanceNormalization)
    return make_scan_norm_kernel(node);
  if (node.op == ir::OpKind::kArgMax) return make_arg_max_kernel(node);
  if (auto typed = typed_reduce_op_of(node.op)) {
    ReduceInfo info;
    const DType dtype = node.input(0)->dtype;
    info.type = *elem_type_of(dtype);
    const std::optional<ops::ReduceOp> f32_op = reduce_op_of(node.op);
    if (f32_op && dtype == DType::kF32) {
      info.op = *f32_op;
    } else {
      info.typed = *typed;
    }
    info.noop_with_empty_axes = node.attrs.get_int("noop_with_empty_axes", 0) != 0;
    const ir::Value* axes = node.inputs.size() > 1 ? node.input(1) : nullptr;
    if (axes) {
      info.has_axes = true;
      info.axes_from_input = true;
    } else if (node.attrs.has("axes")) {
      info.has_axes = true;
      info.axes = node.attrs.get_ints("axes", {});
    }
    return std::unique_ptr<CudaKernel>(new ReduceKernel(node.describe(), std::move(info)));
  }
  if (node.op == ir::OpKind::kLayerNormalization) {
    return std::unique_ptr<CudaKernel>(new LayerNormKernel(node.attrs.get_int("axis", -1),
                                                           node.attrs.get_float("epsilon", 1e-5f)));
  }
  const bool coerce = node.opset < 13;
  return std::unique_ptr<CudaKernel>(new SoftmaxKernel(node.attrs.get_int("axis", coerce ? 1 : -1),
                                                       coerce, node.op == ir::OpKind::kLogSoftmax));
}

}  // namespace voxrt::backends::cuda
