#include "ir/pointwise_program.h"

#include <limits>

#include "ir/shape_inference/elementwise.h"

namespace voxrt::ir {
namespace {

constexpr char kVersionAttr[] = "pointwise_version";
constexpr char kCodeAttr[] = "pointwise_code";
constexpr char kConstantsAttr[] = "pointwise_constants";
constexpr std::size_t kFieldsPerInstruction = 4;

std::string opcode_name(std::int64_t opcode) {
  if (opcode == kPointwiseConstantOpcode) return "Const";
  if (opcode < 0 || opcode > std::numeric_limits<std::uint16_t>::max()) return "?";
  auto op = op_from_id(static_cast<std::uint16_t>(opcode));
  return op ? std::string(op_name(*op)) : "?";
}

}  // namespace

bool is_pointwise_op(OpKind op) {
  switch (op) {
    case OpKind::kRelu:
    case OpKind::kLeakyRelu:
    case OpKind::kClip:
    case OpKind::kSigmoid:
    case OpKind::kTanh:
    case OpKind::kExp:
    case OpKind::kLog:
    case OpKind::kSqrt:
    case OpKind::kNeg:
    case OpKind::kAbs:
    case OpKind::kReciprocal:
    case OpKind::kErf:
    case OpKind::kFloor:
    case OpKind::kCeil:
    case OpKind::kRound:
    case OpKind::kSign:
    case OpKind::kSoftplus:
    case OpKind::kElu:
    case OpKind::kHardSigmoid:
    case OpKind::kSin:
    case OpKind::kCos:
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMax:
    case OpKind::kMin: return true;
    default: return false;
  }
}

int pointwise_arity(std::int64_t opcode) {
  if (opcode == kPointwiseConstantOpcode) return 0;
  if (opcode < 0 || opcode > std::numeric_limits<std::uint16_t>::max()) return -1;
  auto op = op_from_id(static_cast<std::uint16_t>(opcode));
  if (!op || !is_pointwise_op(*op)) return -1;
  switch (*op) {
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMax:
    case OpKind::kMin: return 2;
    default: return 1;
  }
}

int pointwise_param_count(std::int64_t opcode) {
  if (opcode == kPointwiseConstantOpcode) return 1;
  switch (static_cast<OpKind>(opcode)) {
    case OpKind::kLeakyRelu:
    case OpKind::kElu: return 1;
    case OpKind::kHardSigmoid:
    case OpKind::kClip: return 2;
    default: return 0;
  }
}

std::string PointwiseProgram::to_string() const {
  std::string out;
  for (std::size_t i = 0; i < code.size(); ++i) {
    const PointwiseInstruction& ins = code[i];
    if (i) out += "; ";
    out += str_cat("r", input_count + static_cast<std::int64_t>(i), " = ", opcode_name(ins.opcode));
    if (ins.a >= 0) out += str_cat(" r", ins.a);
    if (ins.b >= 0) out += str_cat(" r", ins.b);
    const int params = pointwise_arity(ins.opcode) >= 0 ? pointwise_param_count(ins.opcode) : 0;
    for (int p = 0; p < params && ins.param >= 0; ++p) {
      const std::size_t index = static_cast<std::size_t>(ins.param + p);
      if (index < constants.size()) out += str_cat(" ", constants[index]);
    }
  }
  return out;
}

Status validate_pointwise_program(const PointwiseProgram& program, const std::string& where) {
  if (program.input_count < 0 ||
      static_cast<std::size_t>(program.input_count) > kMaxPointwiseInputs) {
    return corrupt(where, ": pointwise program has ", program.input_count, " inputs, expected 0..",
                   kMaxPointwiseInputs);
  }
  if (program.code.empty() || program.code.size() > kMaxPointwiseInstructions) {
    return corrupt(where, ": pointwise program has ", program.code.size(),
                   " instructions, expected 1..", kMaxPointwiseInstructions);
  }
  for (std::size_t i = 0; i < program.code.size(); ++i) {
    const PointwiseInstruction& ins = program.code[i];
    const std::int64_t defined = program.input_count + static_cast<std::int64_t>(i);
    const int arity = pointwise_arity(ins.opcode);
    const std::string at =
        str_cat(where, ": pointwise instruction ", i, " (", opcode_name(ins.opcode), ")");
    if (arity < 0) {
      return corrupt(at, ": opcode ", ins.opcode, " is not a pointwise op");
    }
    const std::int32_t sources[2] = {ins.a, ins.b};
    for (int s = 0; s < 2; ++s) {
      if (s < arity) {
        if (sources[s] < 0 || sources[s] >= defined) {
          return corrupt(at, ": source ", s, " is register ", sources[s], ", expected one of the ",
                         defined, " registers defined before it");
        }
      } else if (sources[s] != -1) {
        return corrupt(at, ": source ", s, " must be -1 (the op reads ", arity, " sources), found ",
                       sources[s]);
      }
    }
    const int params = pointwise_param_count(ins.opcode);
    if (params == 0) {
      if (ins.param != -1) return corrupt(at, ": param must be -1, found ", ins.param);
    } else if (ins.param < 0 ||
               static_cast<std::size_t>(ins.param) + static_cast<std::size_t>(params) >
                   program.constants.size()) {
      return corrupt(at, ": param ", ins.param, " needs ", params, " constants, the program has ",
                     program.constants.size());
    }
  }
  return Status::ok();
}

void encode_pointwise_program(const PointwiseProgram& program, Attributes& attrs) {
  std::vector<std::int64_t> code;
  code.reserve(program.code.size() * kFieldsPerInstruction);
  for (const PointwiseInstruction& ins : program.code) {
    code.insert(code.end(), {ins.opcode, ins.a, ins.b, ins.param});
  }
  attrs.set(kVersionAttr, kPointwiseProgramVersion);
  attrs.set(kCodeAttr, std::move(code));
  attrs.set(kConstantsAttr, program.constants);
}

Expected<PointwiseProgram> decode_pointwise_program(const Node& node) {
  const std::string where = node.describe();
  const std::int64_t version = node.attrs.get_int(kVersionAttr, -1);
  if (version != kPointwiseProgramVersion) {
    return corrupt(where, ": pointwise_version is ", version, ", this build reads version ",
                   kPointwiseProgramVersion);
  }
  const std::vector<std::int64_t> code = node.attrs.get_ints(kCodeAttr);
  if (code.empty() || code.size() % kFieldsPerInstruction != 0) {
    return corrupt(where, ": pointwise_code has ", code.size(),
                   " values, expected a non-empty multiple of ", kFieldsPerInstruction);
  }
  PointwiseProgram program;
  program.input_count = static_cast<std::int32_t>(
      std::min<std::size_t>(node.inputs.size(), std::numeric_limits<std::int32_t>::max()));
  program.constants = node.attrs.get_floats(kConstantsAttr);
  for (std::size_t i = 0; i < code.size(); i += kFieldsPerInstruction) {
    for (std::size_t f = 1; f < kFieldsPerInstruction; ++f) {
      if (code[i + f] < -1 || code[i + f] > std::numeric_limits<std::int32_t>::max()) {
        return corrupt(where, ": pointwise_code[", i + f, "] = ", code[i + f],
                       " is not a register or constant index");
      }
    }
    program.code.push_back({code[i], static_cast<std::int32_t>(code[i + 1]),
                            static_cast<std::int32_t>(code[i + 2]),
                            static_cast<std::int32_t>(code[i + 3])});
  }
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    if (!node.inputs[i]) return invalid_argument(where, ": input ", i, " is omitted");
  }
  VOXRT_RETURN_IF_ERROR(validate_pointwise_program(program, where));
  return program;
}

float apply_pointwise_instruction(const PointwiseInstruction& ins, std::span<const float> constants,
                                  float a, float b) {
  namespace ew = elementwise;
  const float* param = ins.param >= 0 ? constants.data() + ins.param : nullptr;
  if (ins.opcode == kPointwiseConstantOpcode) return param[0];
  switch (static_cast<OpKind>(ins.opcode)) {
    case OpKind::kRelu: return ew::ReluOp{}(a);
    case OpKind::kLeakyRelu: return ew::LeakyReluOp{param[0]}(a);
    case OpKind::kClip: return ew::ClipOp{param[0], param[1]}(a);
    case OpKind::kSigmoid: return ew::SigmoidOp{}(a);
    case OpKind::kTanh: return ew::TanhOp{}(a);
    case OpKind::kExp: return ew::ExpOp{}(a);
    case OpKind::kLog: return ew::LogOp{}(a);
    case OpKind::kSqrt: return ew::SqrtOp{}(a);
    case OpKind::kNeg: return ew::NegOp{}(a);
    case OpKind::kAbs: return ew::AbsOp{}(a);
    case OpKind::kReciprocal: return ew::ReciprocalOp{}(a);
    case OpKind::kErf: return ew::ErfOp{}(a);
    case OpKind::kFloor: return ew::FloorOp{}(a);
    case OpKind::kCeil: return ew::CeilOp{}(a);
    case OpKind::kRound: return ew::RoundOp{}(a);
    case OpKind::kSign: return ew::SignOp{}(a);
    case OpKind::kSoftplus: return ew::SoftplusOp{}(a);
    case OpKind::kElu: return ew::EluOp{param[0]}(a);
    case OpKind::kHardSigmoid: return ew::HardSigmoidOp{param[0], param[1]}(a);
    case OpKind::kSin: return ew::SinOp{}(a);
    case OpKind::kCos: return ew::CosOp{}(a);
    case OpKind::kAdd: return ew::AddOp{}(a, b);
    case OpKind::kSub: return ew::SubOp{}(a, b);
    case OpKind::kMul: return ew::MulOp{}(a, b);
    case OpKind::kDiv: return ew::DivOp{}(a, b);
    case OpKind::kPow: return ew::PowOp{}(a, b);
    case OpKind::kMax: return ew::MaxOp{}(a, b);
    case OpKind::kMin: return ew::MinOp{}(a, b);
    default: return std::numeric_limits<float>::quiet_NaN();  // rejected by the validator
  }
}

float evaluate_pointwise_program(const PointwiseProgram& program, std::span<const float> inputs,
                                 std::span<float> registers) {
  for (std::int32_t i = 0; i < program.input_count; ++i) registers[i] = inputs[i];
  std::int32_t target = program.input_count;
  for (const PointwiseInstruction& ins : program.code) {
    const float a = ins.a >= 0 ? registers[ins.a] : 0.0f;
    const float b = ins.b >= 0 ? registers[ins.b] : 0.0f;
    registers[target++] = apply_pointwise_instruction(ins, program.constants, a, b);
  }
  return registers[program.output_register()];
}

}  // namespace voxrt::ir
