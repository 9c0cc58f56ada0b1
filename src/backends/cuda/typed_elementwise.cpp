// Elementwise ops on every element type (typed_elementwise.cu): comparisons and logic over masks,
// Where, Cast, Not, integer arithmetic for index computations, and the f16/bf16 forms of the
// math ops; also the f32 ops the float-only kernels of elementwise.cpp do not have (Mod, Round,
// Sign, Sin, Cos). elementwise.cpp keeps the float kernels for what they take.
#include <optional>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/element_ops.h"
#include "backends/cuda/launch_call.h"

namespace voxrt::backends::cuda {
namespace {

struct UnaryMapping {
  ir::OpKind op;
  ops::TypedUnaryOp code;
};
constexpr UnaryMapping kUnary[] = {
    {ir::OpKind::kRelu, ops::TypedUnaryOp::kRelu},
    {ir::OpKind::kLeakyRelu, ops::TypedUnaryOp::kLeakyRelu},
    {ir::OpKind::kClip, ops::TypedUnaryOp::kClip},
    {ir::OpKind::kSigmoid, ops::TypedUnaryOp::kSigmoid},
    {ir::OpKind::kTanh, ops::TypedUnaryOp::kTanh},
    {ir::OpKind::kExp, ops::TypedUnaryOp::kExp},
    {ir::OpKind::kLog, ops::TypedUnaryOp::kLog},
    {ir::OpKind::kSqrt, ops::TypedUnaryOp::kSqrt},
    {ir::OpKind::kNeg, ops::TypedUnaryOp::kNeg},
    {ir::OpKind::kAbs, ops::TypedUnaryOp::kAbs},
    {ir::OpKind::kReciprocal, ops::TypedUnaryOp::kReciprocal},
    {ir::OpKind::kErf, ops::TypedUnaryOp::kErf},
    {ir::OpKind::kFloor, ops::TypedUnaryOp::kFloor},
    {ir::OpKind::kCeil, ops::TypedUnaryOp::kCeil},
    {ir::OpKind::kRound, ops::TypedUnaryOp::kRound},
    {ir::OpKind::kSign, ops::TypedUnaryOp::kSign},
    {ir::OpKind::kSoftplus, ops::TypedUnaryOp::kSoftplus},
    {ir::OpKind::kElu, ops::TypedUnaryOp::kElu},
    {ir::OpKind::kHardSigmoid, ops::TypedUnaryOp::kHardSigmoid},
    {ir::OpKind::kSin, ops::TypedUnaryOp::kSin},
    {ir::OpKind::kCos, ops::TypedUnaryOp::kCos},
    {ir::OpKind::kNot, ops::TypedUnaryOp::kNot},
};

struct BinaryMapping {
  ir::OpKind op;
  ops::TypedBinaryOp code;
};
constexpr BinaryMapping kBinary[] = {
    {ir::OpKind::kAdd, ops::TypedBinaryOp::kAdd},
    {ir::OpKind::kSub, ops::TypedBinaryOp::kSub},
    {ir::OpKind::kMul, ops::TypedBinaryOp::kMul},
    {ir::OpKind::kDiv, ops::TypedBinaryOp::kDiv},
    {ir::OpKind::kMod, ops::TypedBinaryOp::kMod},  // kFmod with fmod=1
    {ir::OpKind::kPow, ops::TypedBinaryOp::kPow},
    {ir::OpKind::kMax, ops::TypedBinaryOp::kMax},
    {ir::OpKind::kMin, ops::TypedBinaryOp::kMin},
    {ir::OpKind::kEqual, ops::TypedBinaryOp::kEqual},
    {ir::OpKind::kGreater, ops::TypedBinaryOp::kGreater},
    {ir::OpKind::kGreaterOrEqual, ops::TypedBinaryOp::kGreaterOrEqual},
    {ir::OpKind::kLess, ops::TypedBinaryOp::kLess},
    {ir::OpKind::kLessOrEqual, ops::TypedBinaryOp::kLessOrEqual},
    {ir::OpKind::kAnd, ops::TypedBinaryOp::kAnd},
    {ir::OpKind::kOr, ops::TypedBinaryOp::kOr},
    {ir::OpKind::kXor, ops::TypedBinaryOp::kXor},
};

std::optional<ops::TypedUnaryOp> unary_code(const ir::Node& node) {
  for (const auto& u : kUnary)
    if (u.op == node.op) return u.code;
  return std::nullopt;
}
std::optional<ops::TypedBinaryOp> binary_code(const ir::Node& node) {
  for (const auto& b : kBinary) {
    if (b.op != node.op) continue;
    if (node.op == ir::OpKind::kMod && node.attrs.get_int("fmod", 0) != 0)
      return ops::TypedBinaryOp::kFmod;
    return b.code;
  }
  return std::nullopt;
}

// The element type of input/output i, or nullopt when absent or not a type the kernels take.
std::optional<ops::ElemType> type_of(const ir::Value* v) {
  return v ? elem_type_of(v->dtype) : std::nullopt;
}

Status check_output_rank(const Dims& dims, const char* what) {
  if (dims.size() > static_cast<std::size_t>(ops::kMaxRank))
    return unsupported(what, " of rank ", dims.size(), " (at most ", ops::kMaxRank, ")");
  return Status::ok();
}

std::string unary_unsupported(const ir::Node& node, ops::TypedUnaryOp code) {
  if (node.inputs.empty() || !node.input(0) || !node.output(0)) return "needs an input";
  const auto type = type_of(node.input(0));
  if (!type) return str_cat("no CUDA kernel for ", dtype_name(node.input(0)->dtype), " elements");
  if (node.output(0)->dtype != node.input(0)->dtype)
    return "the output must have the input's dtype";
  if (!ops::typed_unary_takes(code, *type))
    return str_cat(ir::op_name(node.op), " is not defined for ", dtype_name(node.input(0)->dtype),
                   " on the CUDA backend");
  if (code == ops::TypedUnaryOp::kClip) {
    for (std::size_t i = 1; i < node.inputs.size(); ++i)
      if (node.input(i) && !node.input(i)->is_constant())
        return "Clip bounds computed at run time are taken for f32 only on the CUDA backend";
  }
  return {};
}

std::string binary_unsupported(const ir::Node& node, ops::TypedBinaryOp code) {
  if (node.inputs.size() != 2 || !node.input(0) || !node.input(1) || !node.output(0))
    return "needs exactly two inputs on the CUDA backend";
  const auto a = type_of(node.input(0)), b = type_of(node.input(1));
  if (!a || !b)
    return str_cat("no CUDA kernel for ", dtype_name(node.input(0)->dtype), " and ",
                   dtype_name(node.input(1)->dtype), " elements");
  if (!ops::typed_binary_takes(code, *a, *b))
    return str_cat(ir::op_name(node.op), " does not take (", dtype_name(node.input(0)->dtype), ", ",
                   dtype_name(node.input(1)->dtype), ") on the CUDA backend");
  const DType out = ops::typed_binary_writes_bool(code) ? DType::kBool : node.input(0)->dtype;
  if (node.output(0)->dtype != out)
    return str_cat("the output must be ", dtype_name(out), ", found ",
                   dtype_name(node.output(0)->dtype));
  return {};
}

std::string where_unsupported(const ir::Node& node) {
  if (node.inputs.size() != 3 || !node.input(0) || !node.input(1) || !node.input(2))
    return "Where needs three inputs";
  if (node.input(0)->dtype != DType::kBool || node.input(1)->dtype != node.input(2)->dtype)
    return str_cat("Where takes (bool, T, T), found (", dtype_name(node.input(0)->dtype), ", ",
                   dtype_name(node.input(1)->dtype), ", ", dtype_name(node.input(2)->dtype), ")");
  if (!type_of(node.input(1)))
    return str_cat("no CUDA kernel for ", dtype_name(node.input(1)->dtype), " elements");
  return {};
}

std::string cast_unsupported(const ir::Node& node) {
  if (node.inputs.empty() || !node.input(0) || !node.output(0)) return "Cast needs an input";
  if (!type_of(node.input(0)) || !type_of(node.output(0)))
    return str_cat("no CUDA Cast from ", dtype_name(node.input(0)->dtype), " to ",
                   dtype_name(node.output(0)->dtype));
  return {};
}

ops::BroadcastIndex broadcast_index(const DevTensor& a, const DevTensor& b, const Dims& out) {
  ops::BroadcastIndex index;
  index.rank = static_cast<int>(out.size());
  for (std::size_t d = 0; d < out.size(); ++d) index.dims[d] = out[d];
  broadcast_strides(a.dims, out, index.stride_a);
  broadcast_strides(b.dims, out, index.stride_b);
  return index;
}

Expected<std::unique_ptr<CudaKernel>> make_unary(const ir::Node& node, ops::TypedUnaryOp code) {
  const ops::ElemType type = *type_of(node.input(0));
  double alpha = 0.0, beta = 0.0;
  switch (node.op) {
    case ir::OpKind::kLeakyRelu: alpha = node.attrs.get_float("alpha", 0.01f); break;
    case ir::OpKind::kElu: alpha = node.attrs.get_float("alpha", 1.0f); break;
    case ir::OpKind::kHardSigmoid:
      alpha = node.attrs.get_float("alpha", 0.2f);
      beta = node.attrs.get_float("beta", 0.5f);
      break;
    case ir::OpKind::kClip:
      // Opset < 11: float attributes; later: optional constant inputs (absent: no bound).
      // The float defaults saturate to the integer types' limits.
      alpha = node.attrs.get_float("min", -3.402823466e38f);
      beta = node.attrs.get_float("max", 3.402823466e38f);
      if (node.inputs.size() > 1 && node.input(1))
        alpha = node.input(1)->constant->element_as_double(0);
      if (node.inputs.size() > 2 && node.input(2))
        beta = node.input(2)->constant->element_as_double(0);
      break;
    default: break;
  }
  return make_function_kernel(
      [code, type, alpha, beta](std::span<const DevTensor>, std::span<const DevTensor>) {
        return launch_call("typed unary", [code, type, alpha, beta](std::span<const DevTensor> in,
                                                                    std::span<const DevTensor> out,
                                                                    const CudaRunContext& context) {
          return ops::typed_unary(code, type, alpha, beta, in[0].data, out[0].data, out[0].count(),
                                  context.stream);
        });
      });
}

Expected<std::unique_ptr<CudaKernel>> make_binary(const ir::Node& node, ops::TypedBinaryOp code) {
  const ops::ElemType a = *type_of(node.input(0)), b = *type_of(node.input(1));
  return make_function_kernel(
      [code, a, b](std::span<const DevTensor> inputs,
                   std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        VOXRT_RETURN_IF_ERROR(check_output_rank(outputs[0].dims, "a broadcasting binary op"));
        const ops::BroadcastIndex index = broadcast_index(inputs[0], inputs[1], outputs[0].dims);
        return launch_call("typed binary", [code, a, b, index](std::span<const DevTensor> in,
                                                               std::span<const DevTensor> out,
                                                               const CudaRunContext& context) {
          return ops::typed_binary(code, a, b, in[0].data, in[1].data, out[0].data, out[0].count(),
                                   index, context.stream);
        });
      });
}

Expected<std::unique_ptr<CudaKernel>> make_where() {
  return make_function_kernel(
      [](std::span<const DevTensor> inputs,
         std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& od = outputs[0].dims;
        VOXRT_RETURN_IF_ERROR(check_output_rank(od, "Where"));
        ops::WhereIndex index;
        index.rank = static_cast<int>(od.size());
        for (std::size_t d = 0; d < od.size(); ++d) index.dims[d] = od[d];
        broadcast_strides(inputs[0].dims, od, index.stride_cond);
        broadcast_strides(inputs[1].dims, od, index.stride_x);
        broadcast_strides(inputs[2].dims, od, index.stride_y);
        const int bytes = static_cast<int>(dtype_size_bytes(outputs[0].dtype));
        return launch_call(
            "Where", [index, bytes](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                    const CudaRunContext& context) {
              return ops::where(in[0].as<const bool>(), in[1].data, in[2].data, out[0].data, bytes,
                                out[0].count(), index, context.stream);
            });
      });
}

Expected<std::unique_ptr<CudaKernel>> make_cast(const ir::Node& node) {
  const ops::ElemType from = *type_of(node.input(0)), to = *type_of(node.output(0));
  return make_function_kernel([from, to](std::span<const DevTensor>, std::span<const DevTensor>) {
    return launch_call(
        "Cast", [from, to](std::span<const DevTensor> in, std::span<const DevTensor> out,
                           const CudaRunContext& context) {
          return ops::cast(from, to, in[0].data, out[0].data, out[0].count(), context.stream);
        });
  });
}

}  // namespace

std::optional<ops::ElemType> elem_type_of(DType dtype) {
  switch (dtype) {
    case DType::kF32: return ops::ElemType::kF32;
    case DType::kF16: return ops::ElemType::kF16;
    case DType::kBF16: return ops::ElemType::kBF16;
    case DType::kI8: return ops::ElemType::kI8;
    case DType::kU8: return ops::ElemType::kU8;
    case DType::kI32: return ops::ElemType::kI32;
    case DType::kI64: return ops::ElemType::kI64;
    case DType::kBool: return ops::ElemType::kBool;
  }
  return std::nullopt;
}

std::string typed_elementwise_unsupported(const ir::Node& node) {
  if (node.op == ir::OpKind::kWhere) return where_unsupported(node);
  if (node.op == ir::OpKind::kCast) return cast_unsupported(node);
  if (auto code = binary_code(node)) return binary_unsupported(node, *code);
  if (auto code = unary_code(node)) return unary_unsupported(node, *code);
  return str_cat("no CUDA kernel for ", ir::op_name(node.op));
}

Expected<std::unique_ptr<CudaKernel>> make_typed_elementwise_kernel(const ir::Node& node) {
  const std::string why = typed_elementwise_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  if (node.op == ir::OpKind::kWhere) return make_where();
  if (node.op == ir::OpKind::kCast) return make_cast(node);
  if (auto code = binary_code(node)) return make_binary(node, *code);
  return make_unary(node, *unary_code(node));
}

}  // namespace voxrt::backends::cuda
