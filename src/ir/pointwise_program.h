// The register program of a FusedPointwise node: a chain (or tree) of f32 elementwise ops,
// evaluated per output element over numpy-broadcast inputs.
//
// Registers: 0 .. input_count-1 hold the node's inputs (broadcast to the output element);
// instruction i writes register input_count + i (each register is written once); the program's
// result is the last register. Stored in node attributes, so it travels in engine files:
//   "pointwise_version"   int64, kPointwiseProgramVersion
//   "pointwise_code"      int64 list, 4 per instruction: opcode, source a, source b, param
//   "pointwise_constants" float list
// opcode is the OpKind id of the elementwise op (append-only already), or 0 for "load constant".
// Unused fields are -1. param indexes the constants: the value loaded by opcode 0, LeakyRelu's
// and Elu's alpha, HardSigmoid's alpha then beta, Clip's min then max.
// An engine file can be corrupt: decode() validates everything before a kernel sees it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"

namespace voxrt::ir {

inline constexpr std::int64_t kPointwiseProgramVersion = 1;
inline constexpr std::int64_t kPointwiseConstantOpcode = 0;
// Bounds that keep a corrupt program from asking for absurd scratch memory.
inline constexpr std::size_t kMaxPointwiseInstructions = 1024;
inline constexpr std::size_t kMaxPointwiseInputs = 64;

struct PointwiseInstruction {
  std::int64_t opcode = kPointwiseConstantOpcode;
  std::int32_t a = -1;
  std::int32_t b = -1;
  std::int32_t param = -1;
};

struct PointwiseProgram {
  std::int32_t input_count = 0;
  std::vector<PointwiseInstruction> code;
  std::vector<float> constants;

  std::int32_t register_count() const {
    return input_count + static_cast<std::int32_t>(code.size());
  }
  std::int32_t output_register() const { return register_count() - 1; }
  // "r3 = Mul r0 r2; r4 = Sigmoid r3" for inspect and error messages.
  std::string to_string() const;
};

// Sources an opcode reads (0 for constants, 1 unary, 2 binary); -1 for an opcode programs
// may not contain.
int pointwise_arity(std::int64_t opcode);
// Constants an opcode reads starting at param (0 when param must be -1).
int pointwise_param_count(std::int64_t opcode);
// Whether `op` can appear in a program (the f32 -> f32 unary and binary elementwise ops).
bool is_pointwise_op(OpKind op);

// Checks every field; `where` prefixes the error (node.describe()).
Status validate_pointwise_program(const PointwiseProgram& program, const std::string& where);
// Writes the three attributes.
void encode_pointwise_program(const PointwiseProgram& program, Attributes& attrs);
// Reads and validates the program of a FusedPointwise node (input_count = node.inputs.size()).
Expected<PointwiseProgram> decode_pointwise_program(const Node& node);

// Applies one instruction to scalar operands (a, b unused by ops that do not read them).
float apply_pointwise_instruction(const PointwiseInstruction& instruction,
                                  std::span<const float> constants, float a, float b);
// Evaluates the program for one element: `inputs` has input_count values, `registers` has
// room for register_count(). Returns the result. The reference kernel and folding use this.
float evaluate_pointwise_program(const PointwiseProgram& program, std::span<const float> inputs,
                                 std::span<float> registers);

}  // namespace voxrt::ir
