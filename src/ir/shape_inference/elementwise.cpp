// Shape inference for the elementwise family: unary ops, Cast, broadcasting binary and variadic
// ops, comparisons, logic, Where and FusedPointwise. Small tensors with known contents (shape
// arithmetic: Shape -> Gather -> Mul -> Concat -> Reshape) get their contents computed here too,
// with the same scalar semantics as the kernels (ir/shape_inference/elementwise.h).
#include "ir/shape_inference/elementwise.h"

#include <algorithm>

#include "ir/pointwise_program.h"
#include "ir/shape_inference.h"

namespace voxrt::ir {
namespace {

namespace ew = elementwise;

// Contents are propagated only for tensors this small: enough for shape arithmetic, cheap at
// run time (where every input has data).
constexpr std::int64_t kMaxPropagatedElements = 64;

enum class Kind {
  kCopy,          // Identity, Dropout: any dtype
  kUnaryFloat,    // floating point only
  kUnaryNumeric,  // floating point or integer
  kNot,
  kCast,
  kClip,
  kArithmetic,  // Add Sub Mul Div Mod Max Min: numeric, one dtype
  kPow,         // base and exponent dtypes may differ
  kEqual,       // any one dtype, bool out
  kOrder,       // Greater, Less, ...: numeric, bool out
  kLogical,     // And Or Xor: bool
  kWhere,
  kFused,
};

Kind kind_of(OpKind op) {
  switch (op) {
    case OpKind::kIdentity:
    case OpKind::kDropout: return Kind::kCopy;
    case OpKind::kRelu:
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kSign: return Kind::kUnaryNumeric;
    case OpKind::kNot: return Kind::kNot;
    case OpKind::kCast: return Kind::kCast;
    case OpKind::kClip: return Kind::kClip;
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kMod:
    case OpKind::kMax:
    case OpKind::kMin: return Kind::kArithmetic;
    case OpKind::kPow: return Kind::kPow;
    case OpKind::kEqual: return Kind::kEqual;
    case OpKind::kGreater:
    case OpKind::kGreaterOrEqual:
    case OpKind::kLess:
    case OpKind::kLessOrEqual: return Kind::kOrder;
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor: return Kind::kLogical;
    case OpKind::kWhere: return Kind::kWhere;
    case OpKind::kFusedPointwise: return Kind::kFused;
    default: return Kind::kUnaryFloat;
  }
}

bool is_integer_dtype(DType d) {
  return d == DType::kI8 || d == DType::kU8 || d == DType::kI32 || d == DType::kI64;
}
bool is_numeric(DType d) {
  return is_floating(d) || is_integer_dtype(d);
}

Status expect_dtype(const Node& node, std::size_t index, DType found, bool ok, const char* wanted) {
  if (ok) return Status::ok();
  return invalid_argument(node.describe(), ": expected input ", index, " to be ", wanted,
                          ", found ", dtype_name(found));
}

// Broadcast of the given inputs; nullopt when some rank is unknown.
Expected<std::optional<SymShape>> broadcast_inputs(const Node& node,
                                                   std::span<const ValueInfo> inputs) {
  SymShape shape;
  for (const ValueInfo& in : inputs) {
    if (!in.present) continue;
    if (!in.rank_known) return std::optional<SymShape>{};
    VOXRT_ASSIGN_OR_RETURN(shape, broadcast_shapes(node, shape, in.shape));
  }
  return std::optional<SymShape>{std::move(shape)};
}

// ---- data propagation ----------------------------------------------------------------------

// Source index of every output element in each input (numpy broadcasting), for small tensors.
std::vector<std::vector<std::int64_t>> broadcast_indices(const Dims& out_dims,
                                                         std::span<const Tensor* const> ins) {
  const std::int64_t count = element_count(out_dims);
  std::vector<std::vector<std::int64_t>> indices(ins.size());
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const Dims& dims = ins[k]->dims();
    const Dims strides = row_major_strides(dims);
    const std::size_t lead = out_dims.size() - dims.size();
    indices[k].resize(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) {
      std::int64_t rest = i, offset = 0;
      for (std::size_t d = out_dims.size(); d-- > 0;) {
        const std::int64_t coord = rest % out_dims[d];
        rest /= out_dims[d];
        if (d >= lead && dims[d - lead] != 1) offset += coord * strides[d - lead];
      }
      indices[k][static_cast<std::size_t>(i)] = offset;
    }
  }
  return indices;
}

void store_int(Tensor& t, std::int64_t i, std::int64_t v) {
  switch (t.dtype()) {
    case DType::kI8: t.data<std::int8_t>()[i] = static_cast<std::int8_t>(v); break;
    case DType::kU8: t.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(v); break;
    case DType::kI32: t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v); break;
    case DType::kI64: t.data<std::int64_t>()[i] = v; break;
    case DType::kBool: t.data<bool>()[i] = v != 0; break;
    case DType::kF32: t.data<float>()[i] = static_cast<float>(v); break;
    default: break;  // f16/bf16 are never propagated
  }
}

template <typename F>
void store_real(Tensor& t, std::int64_t i, F v) {
  switch (t.dtype()) {
    case DType::kI8: t.data<std::int8_t>()[i] = ew::saturating_cast<std::int8_t>(v); break;
    case DType::kU8: t.data<std::uint8_t>()[i] = ew::saturating_cast<std::uint8_t>(v); break;
    case DType::kI32: t.data<std::int32_t>()[i] = ew::saturating_cast<std::int32_t>(v); break;
    case DType::kI64: t.data<std::int64_t>()[i] = ew::saturating_cast<std::int64_t>(v); break;
    case DType::kBool: t.data<bool>()[i] = v != F(0); break;
    case DType::kF32: t.data<float>()[i] = static_cast<float>(v); break;
    default: break;
  }
}

bool propagatable(DType d) {
  return d == DType::kF32 || is_integer_dtype(d) || d == DType::kBool;
}

struct SmallEval {
  std::vector<const Tensor*> ins;
  std::vector<std::vector<std::int64_t>> index;
  Tensor out;
  std::int64_t count = 0;

  bool int_domain(std::size_t k) const { return ins[k]->dtype() != DType::kF32; }
  std::int64_t as_int(std::size_t k, std::int64_t i) const {
    return ins[k]->element_as_i64(index[k][static_cast<std::size_t>(i)]);
  }
  float as_float(std::size_t k, std::int64_t i) const {
    return static_cast<float>(ins[k]->element_as_double(index[k][static_cast<std::size_t>(i)]));
  }

  template <typename Op>
  void unary(const Op& op) {
    for (std::int64_t i = 0; i < count; ++i) {
      if constexpr (Op::kIntegerCapable) {
        if (int_domain(0)) {
          store_int(out, i, op(as_int(0, i)));
          continue;
        }
      }
      store_real(out, i, op(as_float(0, i)));
    }
  }
  // Arithmetic or comparison over one input dtype; the result is stored in the output's dtype.
  template <typename Op>
  void binary(const Op& op, std::size_t a = 0, std::size_t b = 1) {
    for (std::int64_t i = 0; i < count; ++i) {
      if (int_domain(a)) {
        store_int(out, i, static_cast<std::int64_t>(op(as_int(a, i), as_int(b, i))));
      } else {
        store_real(out, i, op(as_float(a, i), as_float(b, i)));
      }
    }
  }
};

Status propagate(const Node& node, std::span<const ValueInfo> inputs, InferredOutput& output) {
  if (!is_fully_known(output.shape) || !output.rank_known || !propagatable(output.dtype)) {
    return Status::ok();
  }
  SmallEval eval;
  for (const ValueInfo& in : inputs) {
    if (!in.present) {
      eval.ins.push_back(nullptr);
      continue;
    }
    if (!in.data || !propagatable(in.data->dtype()) ||
        in.data->element_count() > kMaxPropagatedElements) {
      return Status::ok();
    }
    eval.ins.push_back(in.data);
  }
  const Dims out_dims = *known_dims(output.shape);
  eval.count = element_count(out_dims);
  if (eval.count > kMaxPropagatedElements || eval.ins.empty() || !eval.ins[0]) return Status::ok();
  // Clip's absent bounds are the only omitted inputs read below; keep them out of indexing.
  std::vector<const Tensor*> present;
  for (const Tensor* t : eval.ins) present.push_back(t ? t : eval.ins[0]);
  eval.index = broadcast_indices(out_dims, present);
  eval.out = Tensor::zeros(output.dtype, out_dims);

  switch (node.op) {
    case OpKind::kIdentity:
    case OpKind::kDropout:
    case OpKind::kCast:
      for (std::int64_t i = 0; i < eval.count; ++i) {
        if (eval.int_domain(0))
          store_int(eval.out, i, eval.as_int(0, i));
        else
          store_real(eval.out, i, eval.as_float(0, i));
      }
      break;
    case OpKind::kRelu: eval.unary(ew::ReluOp{}); break;
    case OpKind::kLeakyRelu:
      eval.unary(ew::LeakyReluOp{node.attrs.get_float("alpha", 0.01f)});
      break;
    case OpKind::kClip: {
      ew::ClipOp op;
      if (eval.ins.size() > 1 && eval.ins[1] && eval.ins[1]->element_count() == 1)
        op.lo = eval.ins[1]->element_as_double(0);
      if (eval.ins.size() > 2 && eval.ins[2] && eval.ins[2]->element_count() == 1)
        op.hi = eval.ins[2]->element_as_double(0);
      eval.unary(op);
      break;
    }
    case OpKind::kSigmoid: eval.unary(ew::SigmoidOp{}); break;
    case OpKind::kTanh: eval.unary(ew::TanhOp{}); break;
    case OpKind::kExp: eval.unary(ew::ExpOp{}); break;
    case OpKind::kLog: eval.unary(ew::LogOp{}); break;
    case OpKind::kSqrt: eval.unary(ew::SqrtOp{}); break;
    case OpKind::kNeg: eval.unary(ew::NegOp{}); break;
    case OpKind::kAbs: eval.unary(ew::AbsOp{}); break;
    case OpKind::kReciprocal: eval.unary(ew::ReciprocalOp{}); break;
    case OpKind::kErf: eval.unary(ew::ErfOp{}); break;
    case OpKind::kFloor: eval.unary(ew::FloorOp{}); break;
    case OpKind::kCeil: eval.unary(ew::CeilOp{}); break;
    case OpKind::kRound: eval.unary(ew::RoundOp{}); break;
    case OpKind::kSign: eval.unary(ew::SignOp{}); break;
    case OpKind::kSoftplus: eval.unary(ew::SoftplusOp{}); break;
    case OpKind::kElu: eval.unary(ew::EluOp{node.attrs.get_float("alpha", 1.0f)}); break;
    case OpKind::kHardSigmoid:
      eval.unary(ew::HardSigmoidOp{node.attrs.get_float("alpha", 0.2f),
                                   node.attrs.get_float("beta", 0.5f)});
      break;
    case OpKind::kSin: eval.unary(ew::SinOp{}); break;
    case OpKind::kCos: eval.unary(ew::CosOp{}); break;
    case OpKind::kNot:
      for (std::int64_t i = 0; i < eval.count; ++i) store_int(eval.out, i, eval.as_int(0, i) == 0);
      break;
    case OpKind::kAdd: eval.binary(ew::AddOp{}); break;
    case OpKind::kSub: eval.binary(ew::SubOp{}); break;
    case OpKind::kMul: eval.binary(ew::MulOp{}); break;
    case OpKind::kDiv: eval.binary(ew::DivOp{}); break;
    case OpKind::kMod: eval.binary(ew::ModOp{node.attrs.get_int("fmod", 0) != 0}); break;
    case OpKind::kMax:
    case OpKind::kMin: {
      // Fold left over the inputs: out = op(op(in0, in1), in2) ...
      const bool is_max = node.op == OpKind::kMax;
      for (std::int64_t i = 0; i < eval.count; ++i) {
        if (eval.int_domain(0)) {
          std::int64_t acc = eval.as_int(0, i);
          for (std::size_t k = 1; k < eval.ins.size(); ++k) {
            acc =
                is_max ? ew::MaxOp{}(acc, eval.as_int(k, i)) : ew::MinOp{}(acc, eval.as_int(k, i));
          }
          store_int(eval.out, i, acc);
        } else {
          float acc = eval.as_float(0, i);
          for (std::size_t k = 1; k < eval.ins.size(); ++k) {
            acc = is_max ? ew::MaxOp{}(acc, eval.as_float(k, i))
                         : ew::MinOp{}(acc, eval.as_float(k, i));
          }
          store_real(eval.out, i, acc);
        }
      }
      break;
    }
    case OpKind::kPow:
      for (std::int64_t i = 0; i < eval.count; ++i) {
        if (!eval.int_domain(0)) {
          store_real(eval.out, i, ew::PowOp{}(eval.as_float(0, i), eval.as_float(1, i)));
        } else if (eval.int_domain(1)) {
          store_int(eval.out, i, ew::PowOp{}(eval.as_int(0, i), eval.as_int(1, i)));
        } else {
          store_real(eval.out, i,
                     std::pow(static_cast<double>(eval.as_int(0, i)),
                              static_cast<double>(eval.as_float(1, i))));
        }
      }
      break;
    case OpKind::kEqual: eval.binary(ew::EqualOp{}); break;
    case OpKind::kGreater: eval.binary(ew::GreaterOp{}); break;
    case OpKind::kGreaterOrEqual: eval.binary(ew::GreaterOrEqualOp{}); break;
    case OpKind::kLess: eval.binary(ew::LessOp{}); break;
    case OpKind::kLessOrEqual: eval.binary(ew::LessOrEqualOp{}); break;
    case OpKind::kAnd:
    case OpKind::kOr:
    case OpKind::kXor:
      for (std::int64_t i = 0; i < eval.count; ++i) {
        const bool a = eval.as_int(0, i) != 0, b = eval.as_int(1, i) != 0;
        const bool r = node.op == OpKind::kAnd  ? (a && b)
                       : node.op == OpKind::kOr ? (a || b)
                                                : (a != b);
        store_int(eval.out, i, r);
      }
      break;
    case OpKind::kWhere:
      for (std::int64_t i = 0; i < eval.count; ++i) {
        const std::size_t pick = eval.as_int(0, i) != 0 ? 1 : 2;
        if (eval.int_domain(pick))
          store_int(eval.out, i, eval.as_int(pick, i));
        else
          store_real(eval.out, i, eval.as_float(pick, i));
      }
      break;
    default: return Status::ok();  // FusedPointwise: left to constant folding
  }
  output.data = std::move(eval.out);
  return Status::ok();
}

// ---- per-kind inference --------------------------------------------------------------------

Status check_input_count(const Node& node, std::span<const ValueInfo> inputs, std::size_t min_count,
                         std::size_t max_count) {
  if (inputs.size() < min_count || inputs.size() > max_count) {
    return invalid_argument(node.describe(), ": expected ", min_count, "..", max_count,
                            " inputs, found ", inputs.size());
  }
  for (std::size_t i = 0; i < min_count; ++i) {
    if (!inputs[i].present) {
      return invalid_argument(node.describe(), ": input ", i, " is required but omitted");
    }
  }
  return Status::ok();
}

Status check_scalar_bound(const Node& node, std::span<const ValueInfo> inputs, std::size_t i) {
  if (i >= inputs.size() || !inputs[i].present) return Status::ok();
  const ValueInfo& bound = inputs[i];
  if (bound.dtype != inputs[0].dtype) {
    return invalid_argument(node.describe(), ": input ", i, " must have the dtype of input 0 (",
                            dtype_name(inputs[0].dtype), "), found ", dtype_name(bound.dtype));
  }
  if (bound.rank_known) {
    for (const Dim& d : bound.shape) {
      if (d.is_known() && d.value != 1) {
        return invalid_argument(node.describe(), ": input ", i,
                                " must be a scalar (one element), found shape ",
                                sym_shape_to_string(bound.shape));
      }
    }
  }
  return Status::ok();
}

Status infer_unary(const Node& node, std::span<const ValueInfo> inputs, Kind kind,
                   std::vector<InferredOutput>& outputs) {
  const std::size_t max_inputs = kind == Kind::kClip                                  ? 3
                                 : kind == Kind::kCopy && node.op == OpKind::kDropout ? 3
                                                                                      : 1;
  VOXRT_RETURN_IF_ERROR(check_input_count(node, inputs, 1, max_inputs));
  const ValueInfo& x = inputs[0];
  DType out_dtype = x.dtype;
  switch (kind) {
    case Kind::kUnaryFloat:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, x.dtype, is_floating(x.dtype), "floating point"));
      break;
    case Kind::kUnaryNumeric:
    case Kind::kClip:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, x.dtype, is_numeric(x.dtype), "numeric"));
      break;
    case Kind::kNot:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, x.dtype, x.dtype == DType::kBool, "bool"));
      break;
    case Kind::kCast: {
      const std::int64_t to = node.attrs.get_int("to", -1);
      if (to < 0 || to > 255 || dtype_size_bytes(static_cast<DType>(to)) == 0) {
        return invalid_argument(node.describe(), ": attribute 'to' = ", to,
                                " is not a voxrt dtype id");
      }
      out_dtype = static_cast<DType>(to);
      break;
    }
    default: break;
  }
  if (kind == Kind::kClip) {
    VOXRT_RETURN_IF_ERROR(check_scalar_bound(node, inputs, 1));
    VOXRT_RETURN_IF_ERROR(check_scalar_bound(node, inputs, 2));
  }
  if (node.op == OpKind::kDropout && inputs.size() > 2 && inputs[2].present && inputs[2].data &&
      inputs[2].data->element_count() == 1 && inputs[2].data->element_as_i64(0) != 0) {
    return unsupported(node.describe(), ": training_mode = true; voxrt runs inference only");
  }
  if (outputs.empty()) return invalid_argument(node.describe(), ": expected an output");
  outputs[0].dtype = out_dtype;
  outputs[0].shape = x.shape;
  outputs[0].rank_known = x.rank_known;
  if (node.op == OpKind::kDropout && outputs.size() > 1) {
    outputs[1].dtype = DType::kBool;
    outputs[1].shape = x.shape;
    outputs[1].rank_known = x.rank_known;
  }
  return Status::ok();
}

Status infer_broadcasting(const Node& node, std::span<const ValueInfo> inputs, Kind kind,
                          std::vector<InferredOutput>& outputs) {
  std::span<const ValueInfo> operands = inputs;
  switch (kind) {
    case Kind::kWhere: VOXRT_RETURN_IF_ERROR(check_input_count(node, inputs, 3, 3)); break;
    case Kind::kFused:
      VOXRT_RETURN_IF_ERROR(check_input_count(node, inputs, inputs.size(), inputs.size()));
      break;
    case Kind::kArithmetic:
      if (node.op == OpKind::kMax || node.op == OpKind::kMin) {
        VOXRT_RETURN_IF_ERROR(check_input_count(node, inputs,
                                                std::max<std::size_t>(inputs.size(), 1),
                                                std::max<std::size_t>(inputs.size(), 1)));
        break;
      }
      [[fallthrough]];
    default: VOXRT_RETURN_IF_ERROR(check_input_count(node, inputs, 2, 2)); break;
  }
  DType out_dtype = inputs[0].dtype;
  if (kind == Kind::kWhere) {
    VOXRT_RETURN_IF_ERROR(
        expect_dtype(node, 0, inputs[0].dtype, inputs[0].dtype == DType::kBool, "bool"));
    operands = inputs.subspan(1);
    out_dtype = inputs[1].dtype;
  }
  if (kind == Kind::kFused) {
    VOXRT_ASSIGN_OR_RETURN(PointwiseProgram program, decode_pointwise_program(node));
    (void)program;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      VOXRT_RETURN_IF_ERROR(
          expect_dtype(node, i, inputs[i].dtype, inputs[i].dtype == DType::kF32, "f32"));
    }
  } else if (kind != Kind::kPow) {
    for (std::size_t i = 1; i < operands.size(); ++i) {
      if (operands[i].dtype != operands[0].dtype) {
        const std::size_t index = i + (kind == Kind::kWhere ? 1 : 0);
        return invalid_argument(
            node.describe(), ": expected input ", index, " to have the dtype of input ", index - i,
            " (", dtype_name(operands[0].dtype), "), found ", dtype_name(operands[i].dtype));
      }
    }
  }
  const DType d = operands[0].dtype;
  switch (kind) {
    case Kind::kArithmetic:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, d, is_numeric(d), "numeric"));
      break;
    case Kind::kPow:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, d, is_numeric(d), "numeric"));
      VOXRT_RETURN_IF_ERROR(
          expect_dtype(node, 1, inputs[1].dtype, is_numeric(inputs[1].dtype), "numeric"));
      break;
    case Kind::kEqual: out_dtype = DType::kBool; break;
    case Kind::kOrder:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, d, is_numeric(d), "numeric"));
      out_dtype = DType::kBool;
      break;
    case Kind::kLogical:
      VOXRT_RETURN_IF_ERROR(expect_dtype(node, 0, d, d == DType::kBool, "bool"));
      break;
    default: break;
  }
  VOXRT_ASSIGN_OR_RETURN(std::optional<SymShape> shape, broadcast_inputs(node, inputs));
  if (outputs.empty()) return invalid_argument(node.describe(), ": expected an output");
  outputs[0].dtype = out_dtype;
  outputs[0].rank_known = shape.has_value();
  if (shape) outputs[0].shape = std::move(*shape);
  return Status::ok();
}

}  // namespace

Status infer_elementwise(const Node& node, std::span<const ValueInfo> inputs,
                         std::vector<InferredOutput>& outputs) {
  const Kind kind = kind_of(node.op);
  switch (kind) {
    case Kind::kCopy:
    case Kind::kUnaryFloat:
    case Kind::kUnaryNumeric:
    case Kind::kNot:
    case Kind::kCast:
    case Kind::kClip: VOXRT_RETURN_IF_ERROR(infer_unary(node, inputs, kind, outputs)); break;
    default: VOXRT_RETURN_IF_ERROR(infer_broadcasting(node, inputs, kind, outputs)); break;
  }
  VOXRT_RETURN_IF_ERROR(propagate(node, inputs, outputs[0]));
  if (node.op == OpKind::kDropout && outputs.size() > 1 && outputs[0].data) {
    Tensor mask = Tensor::zeros(DType::kBool, outputs[0].data->dims());
    for (std::int64_t i = 0; i < mask.element_count(); ++i) mask.data<bool>()[i] = true;
    outputs[1].data = std::move(mask);
  }
  return Status::ok();
}

}  // namespace voxrt::ir
