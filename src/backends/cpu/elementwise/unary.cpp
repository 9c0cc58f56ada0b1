// Unary elementwise kernels (same shape in and out): math ops, Clip, Not, Identity/Dropout.
// Lets GCC if-convert and vectorize the branch-free approximations in fast_math.h (it will not
// speculate a possibly trapping float op otherwise); voxrt never reads FP exception flags. Set
// before every include so that all inline functions of this file share one set of options.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no per-file optimize pragma
#pragma GCC optimize("no-trapping-math")
#endif
#include <cstring>

#include "backends/cpu/elementwise/elementwise_kernels.h"
#include "backends/cpu/elementwise/fast_math.h"
#include "ir/shape_inference/elementwise.h"

namespace voxrt::backends::cpu::elementwise {
namespace {

namespace ew = ir::elementwise;

// Vectorizable replacements used by the fast tactic.
struct FastExpOp {
  float operator()(float x) const { return fast_exp(x); }
};
struct FastSigmoidOp {
  float operator()(float x) const { return fast_sigmoid(x); }
};
struct FastTanhOp {
  float operator()(float x) const { return fast_tanh(x); }
};
struct FastErfOp {
  float operator()(float x) const { return fast_erf(x); }
};

template <typename T, typename Op>
void unary_loop(const Op& op, const T* __restrict x, T* __restrict y, std::int64_t count) {
  for (std::int64_t i = 0; i < count; ++i) y[i] = op(x[i]);
}

template <typename T, typename Op>
void run_unary(const Op& op, const Tensor& x, Tensor& y, KernelContext& context, bool fast) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  const std::int64_t count = x.element_count();
  if (!fast) {
    // Reference: one element at a time, no threads.
    for (std::int64_t i = 0; i < count; ++i) py[i] = op(px[i]);
    return;
  }
  parallel_elements(context, count, kParallelGrainElements,
                    [&](std::int64_t b, std::int64_t e) { unary_loop(op, px + b, py + b, e - b); });
}

template <typename T, typename Op>
KernelFn unary_fn(Op op, bool fast) {
  return [op, fast](std::span<const Tensor* const> in, std::span<Tensor* const> out,
                    KernelContext& context) {
    run_unary<T>(op, *in[0], *out[0], context, fast);
    return Status::ok();
  };
}

// Ops defined for f32, i32 and i64.
template <typename Op>
Expected<KernelFn> numeric_unary_fn(const ir::Node& node, DType dtype, Op op, bool fast) {
  switch (dtype) {
    case DType::kF32: return unary_fn<float>(op, fast);
    case DType::kI32: return unary_fn<std::int32_t>(op, fast);
    case DType::kI64: return unary_fn<std::int64_t>(op, fast);
    case DType::kI8: return unary_fn<std::int8_t>(op, fast);
    case DType::kU8: return unary_fn<std::uint8_t>(op, fast);
    default: break;
  }
  return unsupported(node.describe(), ": CPU kernel takes f32, i8, u8, i32 or i64, found ",
                     dtype_name(dtype));
}

template <typename Op, typename FastOp = Op>
Expected<KernelFn> float_unary_fn(const ir::Node& node, DType dtype, Op op, bool fast,
                                  FastOp fast_op = FastOp{}) {
  if (dtype != DType::kF32) {
    return unsupported(node.describe(), ": CPU kernel takes f32, found ", dtype_name(dtype));
  }
  // Ops without a fast variant keep their own parameters (alpha, beta) in the fast tactic.
  if constexpr (std::is_same_v<FastOp, Op>)
    return unary_fn<float>(op, fast);
  else if (fast)
    return unary_fn<float>(fast_op, true);
  else
    return unary_fn<float>(op, false);
}

template <typename T>
KernelFn clip_fn(bool fast) {
  return [fast](std::span<const Tensor* const> in, std::span<Tensor* const> out,
                KernelContext& context) {
    ew::ClipOp op;
    if (in.size() > 1 && in[1] && in[1]->element_count() == 1) op.lo = in[1]->element_as_double(0);
    if (in.size() > 2 && in[2] && in[2]->element_count() == 1) op.hi = in[2]->element_as_double(0);
    run_unary<T>(op, *in[0], *out[0], context, fast);
    return Status::ok();
  };
}

KernelFn copy_fn() {
  return [](std::span<const Tensor* const> in, std::span<Tensor* const> out, KernelContext&) {
    if (out[0]->raw_data() != in[0]->raw_data() && in[0]->size_bytes() != 0) {
      std::memcpy(out[0]->raw_data(), in[0]->raw_data(), in[0]->size_bytes());
    }
    // Dropout at inference: the mask is all true.
    if (out.size() > 1 && out[1]) {
      bool* mask = out[1]->data<bool>();
      for (std::int64_t i = 0; i < out[1]->element_count(); ++i) mask[i] = true;
    }
    return Status::ok();
  };
}

}  // namespace

Expected<DType> input_dtype(const ir::Node& node, std::size_t i) {
  const ir::Value* v = node.input(i);
  if (!v) return invalid_argument(node.describe(), ": input ", i, " is missing");
  return v->dtype;
}

Expected<KernelFn> make_unary_fn(const ir::Node& node, bool fast) {
  VOXRT_ASSIGN_OR_RETURN(DType dtype, input_dtype(node, 0));
  const auto& attrs = node.attrs;
  switch (node.op) {
    case ir::OpKind::kIdentity:
    case ir::OpKind::kDropout: return copy_fn();
    case ir::OpKind::kRelu: return numeric_unary_fn(node, dtype, ew::ReluOp{}, fast);
    case ir::OpKind::kNeg: return numeric_unary_fn(node, dtype, ew::NegOp{}, fast);
    case ir::OpKind::kAbs: return numeric_unary_fn(node, dtype, ew::AbsOp{}, fast);
    case ir::OpKind::kSign: return numeric_unary_fn(node, dtype, ew::SignOp{}, fast);
    case ir::OpKind::kClip:
      for (std::size_t i = 1; i < node.inputs.size(); ++i) {
        if (node.inputs[i] && node.inputs[i]->dtype != dtype) {
          return unsupported(node.describe(), ": Clip bound ", i, " must be ", dtype_name(dtype));
        }
      }
      switch (dtype) {
        case DType::kF32: return clip_fn<float>(fast);
        case DType::kI32: return clip_fn<std::int32_t>(fast);
        case DType::kI64: return clip_fn<std::int64_t>(fast);
        case DType::kI8: return clip_fn<std::int8_t>(fast);
        case DType::kU8: return clip_fn<std::uint8_t>(fast);
        default:
          return unsupported(node.describe(), ": CPU kernel takes f32, i8, u8, i32 or i64, found ",
                             dtype_name(dtype));
      }
    case ir::OpKind::kNot:
      if (dtype != DType::kBool) {
        return unsupported(node.describe(), ": Not takes bool, found ", dtype_name(dtype));
      }
      return unary_fn<bool>(ew::NotOp{}, fast);
    case ir::OpKind::kLeakyRelu:
      return float_unary_fn(node, dtype, ew::LeakyReluOp{attrs.get_float("alpha", 0.01f)}, fast);
    case ir::OpKind::kSigmoid:
      return float_unary_fn(node, dtype, ew::SigmoidOp{}, fast, FastSigmoidOp{});
    case ir::OpKind::kTanh: return float_unary_fn(node, dtype, ew::TanhOp{}, fast, FastTanhOp{});
    case ir::OpKind::kExp: return float_unary_fn(node, dtype, ew::ExpOp{}, fast, FastExpOp{});
    case ir::OpKind::kErf: return float_unary_fn(node, dtype, ew::ErfOp{}, fast, FastErfOp{});
    case ir::OpKind::kLog: return float_unary_fn(node, dtype, ew::LogOp{}, fast);
    case ir::OpKind::kSqrt: return float_unary_fn(node, dtype, ew::SqrtOp{}, fast);
    case ir::OpKind::kReciprocal: return float_unary_fn(node, dtype, ew::ReciprocalOp{}, fast);
    case ir::OpKind::kFloor: return float_unary_fn(node, dtype, ew::FloorOp{}, fast);
    case ir::OpKind::kCeil: return float_unary_fn(node, dtype, ew::CeilOp{}, fast);
    case ir::OpKind::kRound: return float_unary_fn(node, dtype, ew::RoundOp{}, fast);
    case ir::OpKind::kSoftplus: return float_unary_fn(node, dtype, ew::SoftplusOp{}, fast);
    case ir::OpKind::kElu:
      return float_unary_fn(node, dtype, ew::EluOp{attrs.get_float("alpha", 1.0f)}, fast);
    case ir::OpKind::kHardSigmoid:
      return float_unary_fn(
          node, dtype,
          ew::HardSigmoidOp{attrs.get_float("alpha", 0.2f), attrs.get_float("beta", 0.5f)}, fast);
    case ir::OpKind::kSin: return float_unary_fn(node, dtype, ew::SinOp{}, fast);
    case ir::OpKind::kCos: return float_unary_fn(node, dtype, ew::CosOp{}, fast);
    default: break;
  }
  return unsupported(node.describe(), ": not a unary elementwise op");
}

}  // namespace voxrt::backends::cpu::elementwise
