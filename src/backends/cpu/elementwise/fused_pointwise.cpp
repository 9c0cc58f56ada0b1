// FusedPointwise: runs a register program (ir/pointwise_program.h) over broadcasting f32 inputs.
// Lets GCC if-convert and vectorize the branch-free approximations in fast_math.h (it will not
// speculate a possibly trapping float op otherwise); voxrt never reads FP exception flags. Set
// before every include so that all inline functions of this file share one set of options.
#if defined(__GNUC__) && !defined(__clang__)  // clang has no per-file optimize pragma
#pragma GCC optimize("no-trapping-math")
#endif
// Reference: the scalar interpreter per element. Vectorized: blocks of kBlockElements, one
// instruction at a time over whole blocks, so each instruction is a plain loop that vectorizes;
// inputs read with stride 1 are used in place, broadcast ones are filled once per block.
#include <algorithm>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/elementwise/elementwise_kernels.h"
#include "backends/cpu/elementwise/fast_math.h"
#include "ir/pointwise_program.h"
#include "ir/shape_inference/elementwise.h"

namespace voxrt::backends::cpu::elementwise {
namespace {

namespace ew = ir::elementwise;
using ir::OpKind;
using ir::PointwiseInstruction;
using ir::PointwiseProgram;

constexpr std::int64_t kBlockElements = 256;

template <typename Op>
void unary_block(float* d, const float* a, std::int64_t n, const Op& op) {
  for (std::int64_t i = 0; i < n; ++i) d[i] = op(a[i]);
}
template <typename Op>
void binary_block(float* d, const float* a, const float* b, std::int64_t n, const Op& op) {
  for (std::int64_t i = 0; i < n; ++i) d[i] = op(a[i], b[i]);
}

VOXRT_MULTIVERSION void run_block_instruction(const PointwiseInstruction& ins,
                                              const float* constants, float* d, const float* a,
                                              const float* b, std::int64_t n) {
  const float* p = ins.param >= 0 ? constants + ins.param : nullptr;
  if (ins.opcode == ir::kPointwiseConstantOpcode) {
    std::fill(d, d + n, p[0]);
    return;
  }
  switch (static_cast<OpKind>(ins.opcode)) {
    case OpKind::kRelu: return unary_block(d, a, n, ew::ReluOp{});
    case OpKind::kLeakyRelu: return unary_block(d, a, n, ew::LeakyReluOp{p[0]});
    case OpKind::kClip: {
      const float lo = p[0], hi = p[1];
      for (std::int64_t i = 0; i < n; ++i) d[i] = std::min(std::max(a[i], lo), hi);
      return;
    }
    case OpKind::kSigmoid: return unary_block(d, a, n, [](float x) { return fast_sigmoid(x); });
    case OpKind::kTanh: return unary_block(d, a, n, [](float x) { return fast_tanh(x); });
    case OpKind::kExp: return unary_block(d, a, n, [](float x) { return fast_exp(x); });
    case OpKind::kErf: return unary_block(d, a, n, [](float x) { return fast_erf(x); });
    case OpKind::kLog: return unary_block(d, a, n, ew::LogOp{});
    case OpKind::kSqrt: return unary_block(d, a, n, ew::SqrtOp{});
    case OpKind::kNeg: return unary_block(d, a, n, ew::NegOp{});
    case OpKind::kAbs: return unary_block(d, a, n, ew::AbsOp{});
    case OpKind::kReciprocal: return unary_block(d, a, n, ew::ReciprocalOp{});
    case OpKind::kFloor: return unary_block(d, a, n, ew::FloorOp{});
    case OpKind::kCeil: return unary_block(d, a, n, ew::CeilOp{});
    case OpKind::kRound: return unary_block(d, a, n, ew::RoundOp{});
    case OpKind::kSign: return unary_block(d, a, n, ew::SignOp{});
    case OpKind::kSoftplus: return unary_block(d, a, n, ew::SoftplusOp{});
    case OpKind::kElu: return unary_block(d, a, n, ew::EluOp{p[0]});
    case OpKind::kHardSigmoid: return unary_block(d, a, n, ew::HardSigmoidOp{p[0], p[1]});
    case OpKind::kSin: return unary_block(d, a, n, ew::SinOp{});
    case OpKind::kCos: return unary_block(d, a, n, ew::CosOp{});
    case OpKind::kAdd: return binary_block(d, a, b, n, ew::AddOp{});
    case OpKind::kSub: return binary_block(d, a, b, n, ew::SubOp{});
    case OpKind::kMul: return binary_block(d, a, b, n, ew::MulOp{});
    case OpKind::kDiv: return binary_block(d, a, b, n, ew::DivOp{});
    case OpKind::kPow: {
      // Power spectra square a constant 2: std::pow costs ~20 multiplies and does not vectorize.
      // x * x and x * x * x agree with powf within its own error (under 1 ulp).
      const float e = b[0];
      if ((e == 2.0f || e == 3.0f) && std::all_of(b, b + n, [e](float v) { return v == e; })) {
        if (e == 2.0f) return unary_block(d, a, n, [](float x) { return x * x; });
        return unary_block(d, a, n, [](float x) { return x * x * x; });
      }
      return binary_block(d, a, b, n, ew::PowOp{});
    }
    case OpKind::kMax: return binary_block(d, a, b, n, ew::MaxOp{});
    case OpKind::kMin: return binary_block(d, a, b, n, ew::MinOp{});
    default: std::fill(d, d + n, 0.0f); return;  // rejected by the validator
  }
}

Status reference_fused(const PointwiseProgram& program, std::span<const Tensor* const> in,
                       Tensor& out) {
  std::vector<float> values(static_cast<std::size_t>(program.input_count));
  std::vector<float> registers(static_cast<std::size_t>(program.register_count()));
  float* po = out.data<float>();
  for (std::int64_t i = 0; i < out.element_count(); ++i) {
    for (std::int32_t k = 0; k < program.input_count; ++k) {
      values[k] = in[k]->data<float>()[broadcast_offset(out.dims(), in[k]->dims(), i)];
    }
    po[i] = ir::evaluate_pointwise_program(program, values, registers);
  }
  return Status::ok();
}

Status fast_fused(const PointwiseProgram& program, std::span<const Tensor* const> in, Tensor& out,
                  KernelContext& context) {
  const std::int64_t count = out.element_count();
  if (count == 0) return Status::ok();
  const auto inputs = static_cast<std::size_t>(program.input_count);
  if (inputs > static_cast<std::size_t>(kMaxBroadcastInputs)) {
    // Wider programs than the segment walker handles: still correct, one element at a time.
    return reference_fused(program, in, out);
  }
  std::vector<Dims> in_dims;
  for (std::size_t k = 0; k < inputs; ++k) in_dims.push_back(in[k]->dims());
  const BroadcastPlan plan = make_broadcast_plan(out.dims(), in_dims);
  float* po = out.data<float>();
  const std::size_t registers = static_cast<std::size_t>(program.register_count());
  const std::size_t last = program.code.size() - 1;

  parallel_elements(
      context, count, kParallelGrainElements / 4, [&](std::int64_t s, std::int64_t e) {
        std::vector<float> scratch(registers * kBlockElements);
        std::vector<const float*> reg(registers);
        auto slot = [&](std::size_t r) { return scratch.data() + r * kBlockElements; };
        // Constant registers never change: fill them once per task.
        for (std::size_t i = 0; i < program.code.size(); ++i) {
          const PointwiseInstruction& ins = program.code[i];
          if (ins.opcode != ir::kPointwiseConstantOpcode) continue;
          std::fill(slot(inputs + i), slot(inputs + i) + kBlockElements,
                    program.constants[ins.param]);
          reg[inputs + i] = slot(inputs + i);
        }
        for_each_segment(plan, s, e,
                         [&](std::int64_t at, const std::int64_t* offsets,
                             const std::int64_t* strides, std::int64_t length) {
                           for (std::int64_t j = 0; j < length; j += kBlockElements) {
                             const std::int64_t n = std::min(kBlockElements, length - j);
                             for (std::size_t k = 0; k < inputs; ++k) {
                               const float* base = in[k]->data<float>() + offsets[k];
                               if (strides[k]) {
                                 reg[k] = base + j;
                               } else {
                                 std::fill(slot(k), slot(k) + n, *base);
                                 reg[k] = slot(k);
                               }
                             }
                             for (std::size_t i = 0; i < program.code.size(); ++i) {
                               const PointwiseInstruction& ins = program.code[i];
                               const bool is_constant = ins.opcode == ir::kPointwiseConstantOpcode;
                               if (is_constant && i != last) continue;
                               float* d = i == last ? po + at + j : slot(inputs + i);
                               run_block_instruction(ins, program.constants.data(), d,
                                                     ins.a >= 0 ? reg[ins.a] : nullptr,
                                                     ins.b >= 0 ? reg[ins.b] : nullptr, n);
                               reg[inputs + i] = d;
                             }
                           }
                         });
      });
  return Status::ok();
}

}  // namespace

Expected<KernelFn> make_fused_pointwise_fn(const ir::Node& node, bool fast) {
  VOXRT_ASSIGN_OR_RETURN(PointwiseProgram program, ir::decode_pointwise_program(node));
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    VOXRT_ASSIGN_OR_RETURN(DType dtype, input_dtype(node, i));
    if (dtype != DType::kF32) {
      return unsupported(node.describe(), ": FusedPointwise takes f32 inputs, input ", i, " is ",
                         dtype_name(dtype));
    }
  }
  return KernelFn([program = std::move(program), fast](std::span<const Tensor* const> in,
                                                       std::span<Tensor* const> out,
                                                       KernelContext& context) {
    if (in.size() != static_cast<std::size_t>(program.input_count)) {
      return invalid_argument("FusedPointwise: expected ", program.input_count, " inputs, found ",
                              in.size());
    }
    return fast ? fast_fused(program, in, *out[0], context) : reference_fused(program, in, *out[0]);
  });
}

}  // namespace voxrt::backends::cpu::elementwise
