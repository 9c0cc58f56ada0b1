// Broadcasting binary kernels (arithmetic, Pow, comparisons, logic), variadic Max/Min (folded
// pairwise into the output) and Where.
#include "backends/cpu/elementwise/elementwise_kernels.h"
#include "ir/shape_inference/elementwise.h"

namespace voxrt::backends::cpu::elementwise {
namespace {

namespace ew = ir::elementwise;

template <typename A, typename B, typename O, typename Op>
void reference_binary(const Op& op, const Tensor& a, const Tensor& b, Tensor& out) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const Dims& dims = out.dims();
  for (std::int64_t i = 0; i < out.element_count(); ++i) {
    po[i] = static_cast<O>(
        op(pa[broadcast_offset(dims, a.dims(), i)], pb[broadcast_offset(dims, b.dims(), i)]));
  }
}

template <typename A, typename B, typename O, typename Op>
void binary_row(const Op& op, const A* pa, const B* pb, O* po, std::int64_t sa, std::int64_t sb,
                std::int64_t n) {
  // Strides are 0 or 1; each case is its own loop so that each vectorizes.
  if (sa && sb) {
    for (std::int64_t i = 0; i < n; ++i) po[i] = static_cast<O>(op(pa[i], pb[i]));
  } else if (sa) {
    const B vb = *pb;
    for (std::int64_t i = 0; i < n; ++i) po[i] = static_cast<O>(op(pa[i], vb));
  } else if (sb) {
    const A va = *pa;
    for (std::int64_t i = 0; i < n; ++i) po[i] = static_cast<O>(op(va, pb[i]));
  } else {
    const O v = static_cast<O>(op(*pa, *pb));
    for (std::int64_t i = 0; i < n; ++i) po[i] = v;
  }
}

template <typename A, typename B, typename O, typename Op>
void fast_binary(const Op& op, const Tensor& a, const Tensor& b, Tensor& out,
                 KernelContext& context) {
  const A* pa = a.data<A>();
  const B* pb = b.data<B>();
  O* po = out.data<O>();
  const std::int64_t count = out.element_count();
  if (count == 0) return;
  if (a.dims() == out.dims() && b.dims() == out.dims()) {
    parallel_elements(context, count, kParallelGrainElements, [&](std::int64_t s, std::int64_t e) {
      binary_row(op, pa + s, pb + s, po + s, 1, 1, e - s);
    });
    return;
  }
  const Dims in_dims[2] = {a.dims(), b.dims()};
  const BroadcastPlan plan = make_broadcast_plan(out.dims(), in_dims);
  parallel_elements(context, count, kParallelGrainElements, [&](std::int64_t s, std::int64_t e) {
    for_each_segment(plan, s, e,
                     [&](std::int64_t o, const std::int64_t* offsets, const std::int64_t* strides,
                         std::int64_t n) {
                       binary_row(op, pa + offsets[0], pb + offsets[1], po + o, strides[0],
                                  strides[1], n);
                     });
  });
}

template <typename A, typename B, typename O, typename Op>
void run_binary(const Op& op, const Tensor& a, const Tensor& b, Tensor& out, KernelContext& context,
                bool fast) {
  if (fast) {
    fast_binary<A, B, O>(op, a, b, out, context);
  } else {
    reference_binary<A, B, O>(op, a, b, out);
  }
}

// out = op(in0, in1), then out = op(out, in_k) for Max/Min with more inputs.
template <typename A, typename B, typename O, typename Op>
KernelFn binary_fn(Op op, bool fast) {
  return [op, fast](std::span<const Tensor* const> in, std::span<Tensor* const> out,
                    KernelContext& context) {
    Tensor& y = *out[0];
    if (in.size() == 1) {
      run_binary<A, B, O>(op, *in[0], *in[0], y, context, fast);  // op(x, x) = x for Max/Min
      return Status::ok();
    }
    run_binary<A, B, O>(op, *in[0], *in[1], y, context, fast);
    for (std::size_t k = 2; k < in.size(); ++k) {
      if constexpr (std::is_same_v<A, O> && std::is_same_v<B, O>) {
        run_binary<O, O, O>(op, y, *in[k], y, context, fast);
      }
    }
    return Status::ok();
  };
}

// f16 and bf16 values computed in f32 and rounded back (what ONNX's reference does in numpy).
template <typename Op, float (*kToFloat)(std::uint16_t), std::uint16_t (*kFromFloat)(float)>
struct HalfOp {
  Op op;
  std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return kFromFloat(op(kToFloat(a), kToFloat(b)));
  }
};

template <typename Op>
Expected<KernelFn> numeric_binary_fn(const ir::Node& node, DType dtype, Op op, bool fast) {
  using U16 = std::uint16_t;
  switch (dtype) {
    case DType::kF32: return binary_fn<float, float, float>(op, fast);
    case DType::kI32: return binary_fn<std::int32_t, std::int32_t, std::int32_t>(op, fast);
    case DType::kI64: return binary_fn<std::int64_t, std::int64_t, std::int64_t>(op, fast);
    case DType::kI8: return binary_fn<std::int8_t, std::int8_t, std::int8_t>(op, fast);
    case DType::kU8: return binary_fn<std::uint8_t, std::uint8_t, std::uint8_t>(op, fast);
    case DType::kF16:
      return binary_fn<U16, U16, U16>(HalfOp<Op, half_bits_to_float, float_to_half_bits>{op}, fast);
    case DType::kBF16:
      return binary_fn<U16, U16, U16>(
          HalfOp<Op, bfloat16_bits_to_float, float_to_bfloat16_bits>{op}, fast);
    default: break;
  }
  return unsupported(node.describe(),
                     ": CPU kernel takes f32, f16, bf16, i8, u8, i32 or i64, found ",
                     dtype_name(dtype));
}

template <typename Op>
Expected<KernelFn> compare_fn(const ir::Node& node, DType dtype, Op op, bool fast,
                              bool allow_bool) {
  switch (dtype) {
    case DType::kF32: return binary_fn<float, float, bool>(op, fast);
    case DType::kI32: return binary_fn<std::int32_t, std::int32_t, bool>(op, fast);
    case DType::kI64: return binary_fn<std::int64_t, std::int64_t, bool>(op, fast);
    case DType::kBool:
      if (allow_bool) return binary_fn<bool, bool, bool>(op, fast);
      break;
    default: break;
  }
  return unsupported(node.describe(), ": CPU kernel takes f32, i32 or i64",
                     allow_bool ? " or bool" : "", ", found ", dtype_name(dtype));
}

template <typename T>
Expected<KernelFn> pow_with_base(const ir::Node& node, DType exponent, bool fast) {
  switch (exponent) {
    case DType::kF32: return binary_fn<T, float, T>(ew::PowOp{}, fast);
    case DType::kI32: return binary_fn<T, std::int32_t, T>(ew::PowOp{}, fast);
    case DType::kI64: return binary_fn<T, std::int64_t, T>(ew::PowOp{}, fast);
    default: break;
  }
  return unsupported(node.describe(), ": Pow exponent must be f32, i32 or i64, found ",
                     dtype_name(exponent));
}

// ---- Where --------------------------------------------------------------------------------

template <typename T>
void where_row(const bool* __restrict c, const T* __restrict x, const T* __restrict y,
               T* __restrict o, const std::int64_t* s, std::int64_t n) {
  if (s[0] && s[1] && s[2]) {
    for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
  } else if (s[0] && !s[1] && s[2]) {
    const T vx = *x;
    for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? vx : y[i];
  } else if (s[0] && s[1] && !s[2]) {
    const T vy = *y;
    for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : vy;
  } else if (s[0]) {
    const T vx = *x, vy = *y;
    for (std::int64_t i = 0; i < n; ++i) o[i] = c[i] ? vx : vy;
  } else {
    const std::int64_t sx = s[1], sy = s[2];
    if (*c) {
      for (std::int64_t i = 0; i < n; ++i) o[i] = x[i * sx];
    } else {
      for (std::int64_t i = 0; i < n; ++i) o[i] = y[i * sy];
    }
  }
}

// Where moves values without looking at them: one loop per element size serves every dtype.
template <typename T>
KernelFn where_fn(bool fast) {
  return [fast](std::span<const Tensor* const> in, std::span<Tensor* const> out,
                KernelContext& context) {
    const Tensor& cond = *in[0];
    const Tensor& x = *in[1];
    const Tensor& y = *in[2];
    Tensor& o = *out[0];
    const bool* pc = cond.data<bool>();
    const T* px = static_cast<const T*>(x.raw_data());
    const T* py = static_cast<const T*>(y.raw_data());
    T* po = static_cast<T*>(o.raw_data());
    const Dims& dims = o.dims();
    const std::int64_t count = o.element_count();
    if (!fast) {
      for (std::int64_t i = 0; i < count; ++i) {
        po[i] = pc[broadcast_offset(dims, cond.dims(), i)]
                    ? px[broadcast_offset(dims, x.dims(), i)]
                    : py[broadcast_offset(dims, y.dims(), i)];
      }
      return Status::ok();
    }
    if (count == 0) return Status::ok();
    const Dims in_dims[3] = {cond.dims(), x.dims(), y.dims()};
    const BroadcastPlan plan = make_broadcast_plan(dims, in_dims);
    parallel_elements(context, count, kParallelGrainElements, [&](std::int64_t s, std::int64_t e) {
      for_each_segment(plan, s, e,
                       [&](std::int64_t at, const std::int64_t* offsets,
                           const std::int64_t* strides, std::int64_t n) {
                         where_row(pc + offsets[0], px + offsets[1], py + offsets[2], po + at,
                                   strides, n);
                       });
    });
    return Status::ok();
  };
}

Expected<KernelFn> make_where_fn(const ir::Node& node, bool fast) {
  VOXRT_ASSIGN_OR_RETURN(DType cond, input_dtype(node, 0));
  VOXRT_ASSIGN_OR_RETURN(DType x, input_dtype(node, 1));
  VOXRT_ASSIGN_OR_RETURN(DType y, input_dtype(node, 2));
  if (cond != DType::kBool || x != y) {
    return unsupported(node.describe(), ": Where takes (bool, T, T), found (", dtype_name(cond),
                       ", ", dtype_name(x), ", ", dtype_name(y), ")");
  }
  switch (dtype_size_bytes(x)) {
    case 1: return where_fn<std::uint8_t>(fast);
    case 2: return where_fn<std::uint16_t>(fast);
    case 4: return where_fn<std::uint32_t>(fast);
    case 8: return where_fn<std::uint64_t>(fast);
    default: break;
  }
  return unsupported(node.describe(), ": Where cannot move ", dtype_name(x));
}

}  // namespace

Expected<KernelFn> make_binary_fn(const ir::Node& node, bool fast) {
  if (node.op == ir::OpKind::kWhere) return make_where_fn(node, fast);
  if (node.inputs.empty()) return invalid_argument(node.describe(), ": expected inputs");
  const std::size_t arity_min =
      (node.op == ir::OpKind::kMax || node.op == ir::OpKind::kMin) ? 1 : 2;
  if (node.inputs.size() < arity_min || (arity_min == 2 && node.inputs.size() != 2)) {
    return invalid_argument(node.describe(), ": expected 2 inputs, found ", node.inputs.size());
  }
  VOXRT_ASSIGN_OR_RETURN(DType dtype, input_dtype(node, 0));
  for (std::size_t i = 1; i < node.inputs.size(); ++i) {
    VOXRT_ASSIGN_OR_RETURN(DType other, input_dtype(node, i));
    if (other != dtype && node.op != ir::OpKind::kPow) {
      return unsupported(node.describe(), ": inputs must share one dtype, found ",
                         dtype_name(dtype), " and ", dtype_name(other));
    }
  }
  switch (node.op) {
    case ir::OpKind::kAdd: return numeric_binary_fn(node, dtype, ew::AddOp{}, fast);
    case ir::OpKind::kSub: return numeric_binary_fn(node, dtype, ew::SubOp{}, fast);
    case ir::OpKind::kMul: return numeric_binary_fn(node, dtype, ew::MulOp{}, fast);
    case ir::OpKind::kDiv: return numeric_binary_fn(node, dtype, ew::DivOp{}, fast);
    case ir::OpKind::kMax: return numeric_binary_fn(node, dtype, ew::MaxOp{}, fast);
    case ir::OpKind::kMin: return numeric_binary_fn(node, dtype, ew::MinOp{}, fast);
    case ir::OpKind::kMod:
      return numeric_binary_fn(node, dtype, ew::ModOp{node.attrs.get_int("fmod", 0) != 0}, fast);
    case ir::OpKind::kPow: {
      VOXRT_ASSIGN_OR_RETURN(DType exponent, input_dtype(node, 1));
      switch (dtype) {
        case DType::kF32: return pow_with_base<float>(node, exponent, fast);
        case DType::kI32: return pow_with_base<std::int32_t>(node, exponent, fast);
        case DType::kI64: return pow_with_base<std::int64_t>(node, exponent, fast);
        default:
          return unsupported(node.describe(), ": Pow base must be f32, i32 or i64, found ",
                             dtype_name(dtype));
      }
    }
    case ir::OpKind::kEqual: return compare_fn(node, dtype, ew::EqualOp{}, fast, true);
    case ir::OpKind::kGreater: return compare_fn(node, dtype, ew::GreaterOp{}, fast, false);
    case ir::OpKind::kGreaterOrEqual:
      return compare_fn(node, dtype, ew::GreaterOrEqualOp{}, fast, false);
    case ir::OpKind::kLess: return compare_fn(node, dtype, ew::LessOp{}, fast, false);
    case ir::OpKind::kLessOrEqual: return compare_fn(node, dtype, ew::LessOrEqualOp{}, fast, false);
    case ir::OpKind::kAnd:
    case ir::OpKind::kOr:
    case ir::OpKind::kXor:
      if (dtype != DType::kBool) {
        return unsupported(node.describe(), ": takes bool, found ", dtype_name(dtype));
      }
      if (node.op == ir::OpKind::kAnd) return binary_fn<bool, bool, bool>(ew::AndOp{}, fast);
      if (node.op == ir::OpKind::kOr) return binary_fn<bool, bool, bool>(ew::OrOp{}, fast);
      return binary_fn<bool, bool, bool>(ew::XorOp{}, fast);
    default: break;
  }
  return unsupported(node.describe(), ": not a binary elementwise op");
}

}  // namespace voxrt::backends::cpu::elementwise
