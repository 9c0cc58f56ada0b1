// The CUDA source generated for FusedPointwise programs, and (with the CUDA backend built) NVRTC
// compiling it for sm_90 without a device. What the kernels compute is checked against the CPU
// on a GPU (tests/gpu: CudaOps.FusedPointwise*).
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "backends/cuda/pointwise_codegen.h"
#include "ir/op_kind.h"

#if VOXRT_TEST_NVRTC
#include "backends/cuda/nvrtc_compile.h"
#endif

namespace voxrt {
namespace {

namespace cuda = backends::cuda;
using ir::OpKind;

std::int64_t op(OpKind kind) {
  return static_cast<std::int64_t>(kind);
}

// r2 = a * b; r3 = Sigmoid r2; r4 = Clip(r3, -0.5, 2); r5 = r4 + 1.5
ir::PointwiseProgram swish_like() {
  ir::PointwiseProgram p;
  p.input_count = 2;
  p.constants = {-0.5f, 2.0f, 1.5f};
  p.code = {{op(OpKind::kMul), 0, 1, -1},
            {op(OpKind::kSigmoid), 2, -1, -1},
            {op(OpKind::kClip), 3, -1, 0},
            {ir::kPointwiseConstantOpcode, -1, -1, 2},
            {op(OpKind::kAdd), 4, 5, -1}};
  return p;
}

// One program that uses every op a FusedPointwise program may hold, chained so each result is
// used: r(k+1) = op(r(k)[, r0]).
ir::PointwiseProgram every_op() {
  ir::PointwiseProgram p;
  p.input_count = 1;
  p.constants = {0.1f, 0.2f, 0.5f, -1.0f, 1.0f, std::numeric_limits<float>::infinity()};
  std::int32_t last = 0;
  const auto add = [&](OpKind kind, std::int32_t param = -1) {
    const int arity = ir::pointwise_arity(op(kind));
    p.code.push_back({op(kind), last, arity == 2 ? 0 : -1, param});
    last = p.input_count + static_cast<std::int32_t>(p.code.size()) - 1;
  };
  for (OpKind kind :
       {OpKind::kRelu,  OpKind::kSigmoid, OpKind::kTanh,  OpKind::kExp,        OpKind::kLog,
        OpKind::kSqrt,  OpKind::kNeg,     OpKind::kAbs,   OpKind::kReciprocal, OpKind::kErf,
        OpKind::kFloor, OpKind::kCeil,    OpKind::kRound, OpKind::kSign,       OpKind::kSoftplus,
        OpKind::kSin,   OpKind::kCos,     OpKind::kAdd,   OpKind::kSub,        OpKind::kMul,
        OpKind::kDiv,   OpKind::kPow,     OpKind::kMax,   OpKind::kMin}) {
    add(kind);
  }
  add(OpKind::kLeakyRelu, 0);
  add(OpKind::kElu, 4);
  add(OpKind::kHardSigmoid, 1);
  add(OpKind::kClip, 3);
  p.code.push_back({ir::kPointwiseConstantOpcode, -1, -1, 5});
  return p;
}

TEST(PointwiseCodegen, EveryOpProgramIsValid) {
  // The fixtures themselves: what the importer and the fusion pass may produce.
  EXPECT_TRUE(ir::validate_pointwise_program(swish_like(), "swish_like").is_ok());
  const Status s = ir::validate_pointwise_program(every_op(), "every_op");
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST(PointwiseCodegen, InstructionsBecomeExpressionsOverRegisters) {
  const ir::PointwiseProgram p = swish_like();
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, 0), "(r0 * r1)");
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, 1), "voxrt_sigmoid(r2)");
  // Constants as exact bit patterns: -0.5f = 0xbf000000, 2.0f = 0x40000000.
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, 2),
            "voxrt_clip(r3, __int_as_float(0xbf000000), __int_as_float(0x40000000))");
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, 3), "__int_as_float(0x3fc00000)");
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, 4), "(r4 + r5)");
}

TEST(PointwiseCodegen, EveryOpHasItsOwnExpression) {
  const ir::PointwiseProgram p = every_op();
  for (std::size_t i = 0; i + 1 < p.code.size(); ++i) {
    const std::string e = cuda::pointwise_instruction_expression(p, i);
    SCOPED_TRACE(str_cat("instruction ", i, ": ", e));
    // Only a bypassed validator reaches the NaN fallback.
    EXPECT_EQ(e.find("0x7fc00000"), std::string::npos);
    EXPECT_NE(e.find(str_cat("r", p.input_count + static_cast<std::int32_t>(i) - 1)),
              std::string::npos)
        << "does not read the previous register";
  }
  // Infinity survives as its bit pattern.
  EXPECT_EQ(cuda::pointwise_instruction_expression(p, p.code.size() - 1),
            "__int_as_float(0x7f800000)");
}

TEST(PointwiseCodegen, SourceHasBothKernelsAndTheWholeProgram) {
  const std::string src = cuda::pointwise_kernel_source(swish_like(), "node 'fused_7'");
  EXPECT_NE(src.find("node 'fused_7'"), std::string::npos);
  EXPECT_NE(src.find(str_cat("void __launch_bounds__(256) ", cuda::kPointwiseFlatKernel, "(")),
            std::string::npos);
  EXPECT_NE(src.find(str_cat("void __launch_bounds__(256) ", cuda::kPointwiseStridedKernel, "(")),
            std::string::npos);
  EXPECT_NE(src.find("const float r6 = (r4 + r5);"), std::string::npos) << src;
  EXPECT_NE(src.find("return r6;"), std::string::npos) << src;
  // Each input read once per element in each kernel: scalars at 0, broadcasts through strides.
  EXPECT_NE(src.find("p.in[1][(p.scalar_mask >> 1) & 1 ? 0 : i]"), std::string::npos) << src;
  EXPECT_NE(src.find("o1 += c * p.strides[1][d];"), std::string::npos) << src;
  EXPECT_NE(src.find(str_cat("sizeof(PointwiseParams) == ", sizeof(cuda::PointwiseParams))),
            std::string::npos);
}

#if VOXRT_TEST_NVRTC

bool is_elf(const std::string& image) {
  return image.size() > 4 && std::memcmp(image.data(),
                                         "\x7f"
                                         "ELF",
                                         4) == 0;
}

TEST(PointwiseNvrtc, CompilesToSassForSm90) {
  for (const auto& [name, program] :
       {std::pair{"swish_like", swish_like()}, std::pair{"every_op", every_op()}}) {
    SCOPED_TRACE(name);
    auto cubin = cuda::nvrtc_compile_cubin(cuda::pointwise_kernel_source(program, name), name, 90);
    if (!cubin && cubin.status().code() == StatusCode::kUnsupported)
      GTEST_SKIP() << cubin.status().message();  // no NVRTC on this machine
    ASSERT_TRUE(cubin) << cubin.status().message();
    EXPECT_TRUE(is_elf(*cubin)) << "not an ELF image, " << cubin->size() << " bytes";
    // Both entry points are in the image, by name.
    EXPECT_NE(cubin->find(cuda::kPointwiseFlatKernel), std::string::npos);
    EXPECT_NE(cubin->find(cuda::kPointwiseStridedKernel), std::string::npos);
  }
  EXPECT_NE(cuda::nvrtc_fingerprint().find("nvrtc=13"), std::string::npos)
      << cuda::nvrtc_fingerprint();
}

TEST(PointwiseNvrtc, CompileErrorsCarryTheLogAndTheProgramName) {
  auto cubin = cuda::nvrtc_compile_cubin("extern \"C\" __global__ void k() { undeclared_x = 1; }",
                                         "broken_node.cu", 90);
  if (!cubin && cubin.status().code() == StatusCode::kUnsupported)
    GTEST_SKIP() << cubin.status().message();
  ASSERT_FALSE(cubin);
  const std::string m = cubin.status().message();
  EXPECT_NE(m.find("broken_node.cu"), std::string::npos) << m;
  EXPECT_NE(m.find("sm_90"), std::string::npos) << m;
  EXPECT_NE(m.find("undeclared_x"), std::string::npos) << m;  // from NVRTC's log
}

#endif

}  // namespace
}  // namespace voxrt
