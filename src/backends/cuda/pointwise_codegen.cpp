#include "backends/cuda/pointwise_codegen.h"

#include <bit>
#include <cstdio>

#include "ir/op_kind.h"

namespace voxrt::backends::cuda {
namespace {

static_assert(sizeof(PointwiseParams) == 8 * (kPointwiseMaxInputs + 4 + kPointwiseMaxRank +
                                              kPointwiseMaxInputs * kPointwiseMaxRank),
              "PointwiseParams must have no padding: the generated source declares it field by "
              "field");

// The device helpers mirror the CPU's scalar ops (ir/shape_inference/elementwise.h) branch for
// branch, so NaN, infinities and signed zeros come out the same; only the math library's last
// bits may differ. No fast-math intrinsics.
constexpr char kPrelude[] = R"(typedef long long voxrt_i64;
struct PointwiseParams {
  const float* in[VOXRT_MAX_INPUTS];
  float* out;
  voxrt_i64 count;
  voxrt_i64 rank;
  voxrt_i64 scalar_mask;
  voxrt_i64 dims[VOXRT_MAX_RANK];
  voxrt_i64 strides[VOXRT_MAX_INPUTS][VOXRT_MAX_RANK];
};
__device__ __forceinline__ float voxrt_relu(float x) { return x > 0.0f ? x : 0.0f; }
__device__ __forceinline__ float voxrt_leaky_relu(float x, float alpha) {
  return x >= 0.0f ? x : alpha * x;
}
__device__ __forceinline__ float voxrt_clip(float x, float lo, float hi) {
  const float y = x < lo ? lo : x;
  return y > hi ? hi : y;
}
__device__ __forceinline__ float voxrt_sigmoid(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  const float e = expf(x);
  return e / (1.0f + e);
}
__device__ __forceinline__ float voxrt_sign(float x) {
  if (x > 0.0f) return 1.0f;
  if (x < 0.0f) return -1.0f;
  return x;
}
__device__ __forceinline__ float voxrt_softplus(float x) {
  return x > 0.0f ? x + log1pf(expf(-x)) : log1pf(expf(x));
}
__device__ __forceinline__ float voxrt_elu(float x, float alpha) {
  return x < 0.0f ? alpha * expm1f(x) : x;
}
__device__ __forceinline__ float voxrt_hard_sigmoid(float x, float alpha, float beta) {
  const float y = alpha * x + beta;
  return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
}
__device__ __forceinline__ float voxrt_max(float a, float b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ float voxrt_min(float a, float b) { return (a < b || a != a) ? a : b; }
)";

// A float constant as its exact bit pattern (also infinities and NaNs).
std::string float_literal(float value) {
  char text[32];
  std::snprintf(text, sizeof(text), "__int_as_float(0x%08x)", std::bit_cast<std::uint32_t>(value));
  return text;
}

std::string reg(std::int32_t index) {
  return str_cat("r", index);
}

std::string input_list(std::int32_t count, const std::string& prefix) {
  std::string out;
  for (std::int32_t k = 0; k < count; ++k) out += str_cat(k ? ", " : "", prefix, reg(k));
  return out;
}

}  // namespace

std::string pointwise_instruction_expression(const ir::PointwiseProgram& program,
                                             std::size_t index) {
  const ir::PointwiseInstruction& ins = program.code[index];
  const auto param = [&](int k) {
    return float_literal(program.constants[static_cast<std::size_t>(ins.param + k)]);
  };
  if (ins.opcode == ir::kPointwiseConstantOpcode) return param(0);
  const std::string a = ins.a >= 0 ? reg(ins.a) : "", b = ins.b >= 0 ? reg(ins.b) : "";
  switch (static_cast<ir::OpKind>(ins.opcode)) {
    case ir::OpKind::kRelu: return str_cat("voxrt_relu(", a, ")");
    case ir::OpKind::kLeakyRelu: return str_cat("voxrt_leaky_relu(", a, ", ", param(0), ")");
    case ir::OpKind::kClip: return str_cat("voxrt_clip(", a, ", ", param(0), ", ", param(1), ")");
    case ir::OpKind::kSigmoid: return str_cat("voxrt_sigmoid(", a, ")");
    case ir::OpKind::kTanh: return str_cat("tanhf(", a, ")");
    case ir::OpKind::kExp: return str_cat("expf(", a, ")");
    case ir::OpKind::kLog: return str_cat("logf(", a, ")");
    case ir::OpKind::kSqrt: return str_cat("sqrtf(", a, ")");
    case ir::OpKind::kNeg: return str_cat("(-", a, ")");
    case ir::OpKind::kAbs: return str_cat("fabsf(", a, ")");
    case ir::OpKind::kReciprocal: return str_cat("(1.0f / ", a, ")");
    case ir::OpKind::kErf: return str_cat("erff(", a, ")");
    case ir::OpKind::kFloor: return str_cat("floorf(", a, ")");
    case ir::OpKind::kCeil: return str_cat("ceilf(", a, ")");
    // Halves to the even neighbour, as ONNX Round (rintf in the default rounding mode).
    case ir::OpKind::kRound: return str_cat("rintf(", a, ")");
    case ir::OpKind::kSign: return str_cat("voxrt_sign(", a, ")");
    case ir::OpKind::kSoftplus: return str_cat("voxrt_softplus(", a, ")");
    case ir::OpKind::kElu: return str_cat("voxrt_elu(", a, ", ", param(0), ")");
    case ir::OpKind::kHardSigmoid:
      return str_cat("voxrt_hard_sigmoid(", a, ", ", param(0), ", ", param(1), ")");
    case ir::OpKind::kSin: return str_cat("sinf(", a, ")");
    case ir::OpKind::kCos: return str_cat("cosf(", a, ")");
    case ir::OpKind::kAdd: return str_cat("(", a, " + ", b, ")");
    case ir::OpKind::kSub: return str_cat("(", a, " - ", b, ")");
    case ir::OpKind::kMul: return str_cat("(", a, " * ", b, ")");
    case ir::OpKind::kDiv: return str_cat("(", a, " / ", b, ")");
    case ir::OpKind::kPow: return str_cat("powf(", a, ", ", b, ")");
    case ir::OpKind::kMax: return str_cat("voxrt_max(", a, ", ", b, ")");
    case ir::OpKind::kMin: return str_cat("voxrt_min(", a, ", ", b, ")");
    default: break;
  }
  // validate_pointwise_program() refuses other opcodes before code is generated; a NaN keeps a
  // bypassed check visible in the results instead of compiling to something plausible.
  return "__int_as_float(0x7fc00000)";
}

std::string pointwise_kernel_source(const ir::PointwiseProgram& program, const std::string& name) {
  const std::int32_t n = program.input_count;
  std::string src = str_cat("// voxrt FusedPointwise ", name, ": ", program.to_string(), "\n",
                            "#define VOXRT_MAX_INPUTS ", kPointwiseMaxInputs, "\n",
                            "#define VOXRT_MAX_RANK ", kPointwiseMaxRank, "\n", kPrelude,
                            "static_assert(sizeof(PointwiseParams) == ", sizeof(PointwiseParams),
                            ", \"the host's PointwiseParams layout\");\n");

  // The program, one const register per instruction; the compiler keeps them all in registers.
  src += str_cat("__device__ __forceinline__ float voxrt_evaluate(", input_list(n, "const float "),
                 ") {\n");
  for (std::size_t i = 0; i < program.code.size(); ++i) {
    src += str_cat("  const float ", reg(n + static_cast<std::int32_t>(i)), " = ",
                   pointwise_instruction_expression(program, i), ";\n");
  }
  src += str_cat("  return ", reg(program.output_register()), ";\n}\n");

  // Grid-stride loops; 64-bit element indices (a tensor may pass 2^31 elements).
  const std::string loop =
      "  const voxrt_i64 step = (voxrt_i64)gridDim.x * blockDim.x;\n"
      "  for (voxrt_i64 i = (voxrt_i64)blockIdx.x * blockDim.x + threadIdx.x; i < p.count; "
      "i += step) {\n";
  src += str_cat("extern \"C\" __global__ void __launch_bounds__(256) ", kPointwiseFlatKernel,
                 "(const PointwiseParams p) {\n", loop);
  for (std::int32_t k = 0; k < n; ++k) {
    src += str_cat("    const float ", reg(k), " = p.in[", k, "][(p.scalar_mask >> ", k,
                   ") & 1 ? 0 : i];\n");
  }
  src += str_cat("    p.out[i] = voxrt_evaluate(", input_list(n, ""), ");\n  }\n}\n");

  src += str_cat("extern \"C\" __global__ void __launch_bounds__(256) ", kPointwiseStridedKernel,
                 "(const PointwiseParams p) {\n", loop, "    voxrt_i64 rest = i;\n");
  for (std::int32_t k = 0; k < n; ++k) src += str_cat("    voxrt_i64 o", k, " = 0;\n");
  src +=
      "    for (int d = (int)p.rank - 1; d >= 0; --d) {\n"
      "      const voxrt_i64 c = rest % p.dims[d];\n"
      "      rest /= p.dims[d];\n";
  for (std::int32_t k = 0; k < n; ++k)
    src += str_cat("      o", k, " += c * p.strides[", k, "][d];\n");
  src += "    }\n";
  for (std::int32_t k = 0; k < n; ++k)
    src += str_cat("    const float ", reg(k), " = p.in[", k, "][o", k, "];\n");
  src += str_cat("    p.out[i] = voxrt_evaluate(", input_list(n, ""), ");\n  }\n}\n");
  return src;
}

}  // namespace voxrt::backends::cuda
