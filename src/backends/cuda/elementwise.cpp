// Elementwise kernels (f32): unary math/activations and broadcasting binary ops. Every other
// element type, and the ops these float kernels do not have, go to typed_elementwise.cpp.
#include <algorithm>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {
namespace {

struct UnaryInfo {
  ir::OpKind op;
  ops::UnaryOp code;
};
constexpr UnaryInfo kUnary[] = {
    {ir::OpKind::kRelu, ops::UnaryOp::kRelu},
    {ir::OpKind::kLeakyRelu, ops::UnaryOp::kLeakyRelu},
    {ir::OpKind::kClip, ops::UnaryOp::kClip},
    {ir::OpKind::kSigmoid, ops::UnaryOp::kSigmoid},
    {ir::OpKind::kTanh, ops::UnaryOp::kTanh},
    {ir::OpKind::kExp, ops::UnaryOp::kExp},
    {ir::OpKind::kLog, ops::UnaryOp::kLog},
    {ir::OpKind::kSqrt, ops::UnaryOp::kSqrt},
    {ir::OpKind::kNeg, ops::UnaryOp::kNeg},
    {ir::OpKind::kAbs, ops::UnaryOp::kAbs},
    {ir::OpKind::kReciprocal, ops::UnaryOp::kReciprocal},
    {ir::OpKind::kErf, ops::UnaryOp::kErf},
    {ir::OpKind::kSoftplus, ops::UnaryOp::kSoftplus},
    {ir::OpKind::kFloor, ops::UnaryOp::kFloor},
    {ir::OpKind::kCeil, ops::UnaryOp::kCeil},
    {ir::OpKind::kHardSigmoid, ops::UnaryOp::kHardSigmoid},
    {ir::OpKind::kElu, ops::UnaryOp::kElu},
};

struct BinaryInfo {
  ir::OpKind op;
  ops::BinaryOp code;
};
constexpr BinaryInfo kBinary[] = {
    {ir::OpKind::kAdd, ops::BinaryOp::kAdd}, {ir::OpKind::kSub, ops::BinaryOp::kSub},
    {ir::OpKind::kMul, ops::BinaryOp::kMul}, {ir::OpKind::kDiv, ops::BinaryOp::kDiv},
    {ir::OpKind::kPow, ops::BinaryOp::kPow}, {ir::OpKind::kMax, ops::BinaryOp::kMax},
    {ir::OpKind::kMin, ops::BinaryOp::kMin},
};

const UnaryInfo* find_unary(ir::OpKind op) {
  for (const auto& u : kUnary) {
    if (u.op == op) return &u;
  }
  return nullptr;
}
const BinaryInfo* find_binary(ir::OpKind op) {
  for (const auto& b : kBinary) {
    if (b.op == op) return &b;
  }
  return nullptr;
}

bool all_f32(const ir::Node& node) {
  for (const ir::Value* v : node.inputs) {
    if (v && v->dtype != DType::kF32) return false;
  }
  for (const ir::Value* v : node.outputs) {
    if (v && v->dtype != DType::kF32) return false;
  }
  return true;
}

class UnaryCall final : public CudaCall {
 public:
  UnaryCall(ops::UnaryOp op, float alpha, float beta) : op_(op), alpha_(alpha), beta_(beta) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(ops::unary(op_, alpha_, beta_, in[0].as<const float>(), out[0].as<float>(),
                              out[0].count(), context.stream));
    return Status::ok();
  }

 private:
  ops::UnaryOp op_;
  float alpha_, beta_;
};

class UnaryKernel final : public CudaKernel {
 public:
  UnaryKernel(ops::UnaryOp op, float alpha, float beta) : op_(op), alpha_(alpha), beta_(beta) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor>,
                                              std::span<const DevTensor>,
                                              cublasLtHandle_t) const override {
    return std::unique_ptr<CudaCall>(new UnaryCall(op_, alpha_, beta_));
  }

 private:
  ops::UnaryOp op_;
  float alpha_, beta_;
};

class BinaryCall final : public CudaCall {
 public:
  BinaryCall(ops::BinaryOp op, ops::BroadcastIndex index) : op_(op), index_(index) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(ops::binary(op_, in[0].as<const float>(), in[1].as<const float>(),
                               out[0].as<float>(), out[0].count(), index_, context.stream));
    return Status::ok();
  }

 private:
  ops::BinaryOp op_;
  ops::BroadcastIndex index_;
};

class BinaryKernel final : public CudaKernel {
 public:
  explicit BinaryKernel(ops::BinaryOp op) : op_(op) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    const Dims& od = out[0].dims;
    if (od.size() > static_cast<std::size_t>(ops::kMaxRank))
      return unsupported("binary op of rank ", od.size(), " (at most ", ops::kMaxRank, ")");
    ops::BroadcastIndex index;
    index.rank = static_cast<int>(od.size());
    for (std::size_t d = 0; d < od.size(); ++d) index.dims[d] = od[d];
    broadcast_strides(in[0].dims, od, index.stride_a);
    broadcast_strides(in[1].dims, od, index.stride_b);
    return std::unique_ptr<CudaCall>(new BinaryCall(op_, index));
  }

 private:
  ops::BinaryOp op_;
};

// Clip whose bounds are computed at run time (a tensor of one element each, e.g. the
// melspectrogram's max - 80 dB): Max with the lower bound, then Min with the upper one, each a
// broadcasting binary launch (no bound read back to the host, so it stays capturable).
class ClipTensorBoundsCall final : public CudaCall {
 public:
  ClipTensorBoundsCall(ops::BroadcastIndex index, bool has_lo, bool has_hi)
      : index_(index), has_lo_(has_lo), has_hi_(has_hi) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    const float* x = in[0].as<const float>();
    float* y = out[0].as<float>();
    const std::int64_t n = out[0].count();
    if (!has_lo_ && !has_hi_) {
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(y, x, out[0].bytes(), cudaMemcpyDeviceToDevice, context.stream));
      return Status::ok();
    }
    if (has_lo_) {
      VOXRT_CUDA_TRY(ops::binary(ops::BinaryOp::kMax, x, in[1].as<const float>(), y, n, index_,
                                 context.stream));
      x = y;  // in place from here
    }
    if (has_hi_) {
      VOXRT_CUDA_TRY(ops::binary(ops::BinaryOp::kMin, x, in[2].as<const float>(), y, n, index_,
                                 context.stream));
    }
    return Status::ok();
  }

 private:
  ops::BroadcastIndex index_;  // a over the output, b a single element
  bool has_lo_, has_hi_;
};

class ClipTensorBoundsKernel final : public CudaKernel {
 public:
  // Which bounds the node has comes from the node: at prepare time the tensors' addresses may
  // not be assigned yet (a null data pointer there does not mean an omitted input).
  ClipTensorBoundsKernel(bool has_lo, bool has_hi) : has_lo_(has_lo), has_hi_(has_hi) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    const bool has_lo = has_lo_ && in.size() > 1, has_hi = has_hi_ && in.size() > 2;
    if ((has_lo && in[1].count() != 1) || (has_hi && in[2].count() != 1))
      return invalid_argument("Clip bounds must have one element each");
    const Dims& od = out[0].dims;
    if (od.size() > static_cast<std::size_t>(ops::kMaxRank))
      return unsupported("Clip of rank ", od.size(), " (at most ", ops::kMaxRank, ")");
    ops::BroadcastIndex index;
    index.rank = static_cast<int>(od.size());
    for (std::size_t d = 0; d < od.size(); ++d) {
      index.dims[d] = od[d];
      index.stride_b[d] = 0;
    }
    broadcast_strides(in[0].dims, od, index.stride_a);
    return std::unique_ptr<CudaCall>(new ClipTensorBoundsCall(index, has_lo, has_hi));
  }

 private:
  bool has_lo_, has_hi_;
};

}  // namespace

void broadcast_strides(const Dims& dims, const Dims& out, std::int64_t* strides) {
  const std::size_t rank = out.size();
  std::int64_t stride = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t d = rank - 1 - i;
    if (i < dims.size()) {
      const std::int64_t size = dims[dims.size() - 1 - i];
      strides[d] = size == 1 && out[d] != 1 ? 0 : stride;
      stride *= size;
    } else {
      strides[d] = 0;
    }
  }
}

namespace {

// Whether the float kernels of this file run the node (else the typed ones do, or nothing).
bool float_kernel_runs(const ir::Node& node) {
  if (!all_f32(node)) return false;
  if (find_binary(node.op)) return node.inputs.size() == 2 && node.input(0) && node.input(1);
  return find_unary(node.op) != nullptr;
}

}  // namespace

std::string elementwise_unsupported(const ir::Node& node) {
  if (node.op == ir::OpKind::kFusedPointwise) return fused_pointwise_unsupported(node);
  if (float_kernel_runs(node)) return {};
  return typed_elementwise_unsupported(node);
}

Expected<std::unique_ptr<CudaKernel>> make_elementwise_kernel(const ir::Node& node) {
  const std::string why = elementwise_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  if (node.op == ir::OpKind::kFusedPointwise) return make_fused_pointwise_kernel(node);
  if (!float_kernel_runs(node)) return make_typed_elementwise_kernel(node);
  if (const BinaryInfo* b = find_binary(node.op))
    return std::unique_ptr<CudaKernel>(new BinaryKernel(b->code));
  const UnaryInfo* u = find_unary(node.op);
  float alpha = 0.0f, beta = 0.0f;
  switch (node.op) {
    case ir::OpKind::kLeakyRelu: alpha = node.attrs.get_float("alpha", 0.01f); break;
    case ir::OpKind::kHardSigmoid:
      alpha = node.attrs.get_float("alpha", 0.2f);
      beta = node.attrs.get_float("beta", 0.5f);
      break;
    case ir::OpKind::kElu: alpha = node.attrs.get_float("alpha", 1.0f); break;
    case ir::OpKind::kClip: {
      const bool runtime_bound = (node.input(1) && !node.input(1)->is_constant()) ||
                                 (node.input(2) && !node.input(2)->is_constant());
      if (runtime_bound) {
        return std::unique_ptr<CudaKernel>(
            new ClipTensorBoundsKernel(node.input(1) != nullptr, node.input(2) != nullptr));
      }
      alpha = node.attrs.get_float("min", -3.402823466e38f);
      beta = node.attrs.get_float("max", 3.402823466e38f);
      if (node.input(1)) alpha = static_cast<float>(node.input(1)->constant->element_as_double(0));
      if (node.input(2)) beta = static_cast<float>(node.input(2)->constant->element_as_double(0));
      break;
    }
    default: break;
  }
  return std::unique_ptr<CudaKernel>(new UnaryKernel(u->code, alpha, beta));
}

}  // namespace voxrt::backends::cuda
