// Softmax / LogSoftmax, LayerNormalization and ReduceSum/Mean/Max/Min on the device, reducing in
// f32.
#include <algorithm>
#include <optional>

#include "backends/cuda/cuda_common.h"

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
  LayerNormCall(std::int64_t rows, std::int64_t cols, float epsilon)
      : rows_(rows), cols_(cols), epsilon_(epsilon) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const float* bias = in.size() > 2 ? in[2].as<const float>() : nullptr;
    VOXRT_CUDA_TRY(ops::layer_norm(in[0].as<const float>(), in[1].as<const float>(), bias,
                                   out[0].as<float>(), rows_, cols_, epsilon_, context.stream));
    return Status::ok();
  }

 private:
  std::int64_t rows_, cols_;
  float epsilon_;
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
    if (in[1].count() != cols || (in.size() > 2 && in[2].data && in[2].count() != cols)) {
      return unsupported("LayerNormalization scale/bias must have ", cols,
                         " elements (no broadcasting on the CUDA backend)");
    }
    return std::unique_ptr<CudaCall>(new LayerNormCall(product(d, 0, a), cols, epsilon_));
  }

 private:
  std::int64_t axis_;
  float epsilon_;
};

// ReduceSum/Mean/Max/Min over constant axes that are adjacent once sorted (all axes, the last
// ones, one axis...): x is then [outer, extent, inner] and keepdims changes nothing in memory.
struct ReduceInfo {
  ops::ReduceOp op = ops::ReduceOp::kSum;
  bool has_axes = false;  // absent: every axis (or nothing with noop_with_empty_axes)
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
  ReduceCall(ops::ReduceOp op, std::int64_t outer, std::int64_t extent, std::int64_t inner,
             bool copy)
      : op_(op), outer_(outer), extent_(extent), inner_(inner), copy_(copy) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    if (copy_) {  // noop_with_empty_axes: the input as it is
      VOXRT_CUDA_TRY(cudaMemcpyAsync(out[0].data, in[0].data, in[0].bytes(),
                                     cudaMemcpyDeviceToDevice, context.stream));
      return Status::ok();
    }
    VOXRT_CUDA_TRY(ops::reduce(op_, in[0].as<const float>(), out[0].as<float>(), outer_, extent_,
                               inner_, context.stream));
    return Status::ok();
  }

 private:
  ops::ReduceOp op_;
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
    if (info_.has_axes && info_.axes.empty() && info_.noop_with_empty_axes)
      return std::unique_ptr<CudaCall>(new ReduceCall(info_.op, 0, 0, 0, true));
    std::vector<bool> reduced(d.size(), !info_.has_axes || info_.axes.empty());
    for (std::int64_t axis : info_.axes) {
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
      return std::unique_ptr<CudaCall>(new ReduceCall(info_.op, 1, 1, 1, false));
    for (std::size_t a = first; a <= last; ++a) {
      if (!reduced[a])
        return unsupported(where_, ": the CUDA backend reduces over adjacent axes only");
    }
    return std::unique_ptr<CudaCall>(new ReduceCall(info_.op, product(d, 0, first),
                                                    product(d, first, last + 1),
                                                    product(d, last + 1, d.size()), false));
  }

 private:
  std::string where_;
  ReduceInfo info_;
};

}  // namespace

std::string reduction_unsupported(const ir::Node& node) {
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (i == 1 && reduce_op_of(node.op)) continue;  // the i64 axes
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
    case ir::OpKind::kReduceSum:
    case ir::OpKind::kReduceMean:
    case ir::OpKind::kReduceMax:
    case ir::OpKind::kReduceMin: {
      if (!node.output(0) || node.output(0)->dtype != DType::kF32)
        return "f32 only on the CUDA backend";
      const ir::Value* axes = node.inputs.size() > 1 ? node.input(1) : nullptr;
      if (axes && !axes->is_constant()) return "the axes must be constants on the CUDA backend";
      return {};
    }
    default: return str_cat("no CUDA kernel for ", ir::op_name(node.op));
  }
}

Expected<std::unique_ptr<CudaKernel>> make_reduction_kernel(const ir::Node& node,
                                                            KernelBuildContext&) {
  const std::string why = reduction_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  if (auto op = reduce_op_of(node.op)) {
    ReduceInfo info;
    info.op = *op;
    info.noop_with_empty_axes = node.attrs.get_int("noop_with_empty_axes", 0) != 0;
    const ir::Value* axes = node.inputs.size() > 1 ? node.input(1) : nullptr;
    if (axes) {
      info.has_axes = true;
      const Tensor& t = *axes->constant;
      for (std::int64_t i = 0; i < t.element_count(); ++i)
        info.axes.push_back(static_cast<std::int64_t>(t.element_as_double(i)));
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
