// Softmax / LogSoftmax and LayerNormalization on the device, reducing in f32.
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

}  // namespace

std::string reduction_unsupported(const ir::Node& node) {
  for (const ir::Value* v : node.inputs) {
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
  if (node.op == ir::OpKind::kLayerNormalization) {
    return std::unique_ptr<CudaKernel>(new LayerNormKernel(node.attrs.get_int("axis", -1),
                                                           node.attrs.get_float("epsilon", 1e-5f)));
  }
  const bool coerce = node.opset < 13;
  return std::unique_ptr<CudaKernel>(new SoftmaxKernel(node.attrs.get_int("axis", coerce ? 1 : -1),
                                                       coerce, node.op == ir::OpKind::kLogSoftmax));
}

}  // namespace voxrt::backends::cuda
