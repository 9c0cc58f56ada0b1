// Pieces shared by the dense CPU kernels: the fused activation, the matmul problem after
// broadcasting, per-thread scratch and the threading rules for OpenBLAS and oneDNN.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "backends/kernel.h"
#include "ir/graph.h"

namespace voxrt::ir {
struct ConvGeometry;
}

namespace voxrt::backends::cpu::dense {

// Tactic ids of the dense family (stored in engine files: append only).
inline constexpr TacticId kTacticOpenBlas = 1;           // MatMul, Gemm, FusedMatMul
inline constexpr TacticId kTacticOneDnnMatMul = 2;       // MatMul, Gemm, FusedMatMul
inline constexpr TacticId kTacticIm2ColOpenBlas = 3;     // Conv, FusedConv
inline constexpr TacticId kTacticOneDnnConv = 4;         // Conv, FusedConv (plain activations)
inline constexpr TacticId kTacticOneDnnConvBlocked = 5;  // Conv, FusedConv (oneDNN's layouts)
inline constexpr TacticId kTacticFftConv = 6;            // Conv, FusedConv (2-D, large kernels)
inline constexpr TacticId kTacticFftConvLargeTiles = 7;  // the same over tiles twice as long
inline constexpr TacticId kTacticDirectConv = 8;        // Conv, FusedConv (2-D, AVX2, few channels)
inline constexpr TacticId kTacticFewPositionsConv = 9;  // Conv, FusedConv (few output positions)
inline constexpr TacticId kTacticPackedAvx512 = 10;     // MatMul, Gemm, FusedMatMul (constant B)
inline constexpr TacticId kTacticDepthwiseAvx512 = 11;  // Conv, FusedConv (1-D depthwise)
inline constexpr TacticId kTacticPointwiseAvx512 = 12;  // Conv, FusedConv (1-D, kernel 1)
// 20 to 23 are the INT8 tactics of layers marked int8 (quantized/quantized_kernels.h).

enum class ActivationKind { kNone, kRelu, kClip, kLeakyRelu, kSigmoid, kTanh, kGeluErf, kSilu };

struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float alpha = 0.0f;  // leaky_relu slope, clip min
  float beta = 0.0f;   // clip max
  // A clamp applied after the activation (a Max / Min / Clip that followed it in the model).
  bool has_clamp = false;
  float clamp_min = 0.0f, clamp_max = 0.0f;
};

// The activation attributes of a fused op ("none" for Conv, Gemm and MatMul).
Expected<Activation> read_activation(const ir::Node& node);
void apply_activation(const Activation& activation, float* data, std::int64_t count);
float activation_value(const Activation& activation, float x);

// What a Gemm/MatMul/FusedMatMul node computes, from its attributes and which inputs are constant:
//   Y[b] = act(alpha * op_a(A[b]) x op_b(B[b]) + beta * C),  C broadcast to [M, N]
// (Gemm's C, or FusedMatMul's bias as C of shape [N] with beta 1).
struct MatMulConfig {
  bool trans_a = false;
  bool trans_b = false;
  float alpha = 1.0f;
  float beta = 1.0f;
  bool has_c = false;
  Activation activation;
};
Expected<MatMulConfig> read_matmul_config(const ir::Node& node);
// The constant C as one float per output column, beta folded in (C of shape [N], [1, N] or one
// value; empty without C); nullopt for any other C (not constant, not f32, a full [M, N]).
// Shared by the INT8 layers of both backends, whose epilogues add a per-column bias.
std::optional<std::vector<float>> constant_column_bias(const ir::Node& node,
                                                       const MatMulConfig& config,
                                                       std::int64_t columns);

// The batched problem for concrete operand dims, after numpy broadcasting. Every batch b reads
// A at a_offsets[b] and B at b_offsets[b] and writes Y at b * m * n (Y is contiguous).
struct MatMulProblem {
  std::int64_t batch_count = 1;
  std::int64_t m = 1, n = 1, k = 1;
  // Leading dims of A and B as stored (row-major, before the transposes).
  std::int64_t lda = 1, ldb = 1;
  bool trans_a = false;
  bool trans_b = false;
  std::vector<std::int64_t> a_offsets;
  std::vector<std::int64_t> b_offsets;
  // True when every batch reads the same B (B has no batch dims, or they broadcast).
  bool b_shared = true;
};
// When B is shared and A is not transposed, batches of A are folded into M (one big GEMM).
Expected<MatMulProblem> plan_matmul(const ir::Node& node, const MatMulConfig& config,
                                    const Dims& a_dims, const Dims& b_dims);

// Writes C broadcast to rows [m_begin, m_end) x cols [n_begin, n_end) of one [M, N] output
// (row stride ldy); C has rank <= 2 and dims 1 or equal to M / N (checked by shape inference).
void broadcast_c_into(const Tensor& c, std::int64_t m, std::int64_t n, std::int64_t m_begin,
                      std::int64_t m_end, std::int64_t n_begin, std::int64_t n_end, float* y,
                      std::int64_t ldy);

// Y = act(beta * C) (or act(0)) for a problem with K == 0, where there is nothing to multiply.
void fill_empty_k_matmul(const MatMulConfig& config, const MatMulProblem& problem, const Tensor* c,
                         float* y);

// A convolution's spatial geometry padded to 3 axes (leading extents of 1, stride and dilation
// 1, no padding), so 1-D to 3-D convolutions share one loop nest.
struct Geometry3 {
  std::int64_t in[3], kernel[3], out[3], stride[3], dilation[3], pad[3];
};
Geometry3 to_3d(const ir::ConvGeometry& g);

// Per-thread scratch that grows and is kept, so steady-state calls do not allocate. Each slot
// is a separate buffer; a kernel uses distinct slots for buffers live at the same time.
float* thread_scratch_floats(std::size_t count, int slot);
void* thread_scratch_bytes(std::size_t bytes, int slot);

// OpenBLAS (pthread build) has one global thread count, so it is pinned to 1 at first use and
// dense kernels split GEMMs across KernelContext::pool themselves; this keeps concurrent
// ExecutionContexts from fighting over the setting. Call before any cblas_* use.
void ensure_openblas_single_threaded();

// oneDNN here runs on OpenMP (Debian's libdnnl links libgomp); the thread count is a per-thread
// OpenMP setting, set before each primitive execution to KernelContext::pool->threads().
void set_onednn_threads(int threads);

// The fp32 element type check every dense tactic list starts with.
bool all_inputs_f32(const ir::Node& node);

// A 1-D Conv / FusedConv (X of rank 3 where known) with constant weights [O, C/g, K] and a bias
// that is absent or a constant of O values.
bool is_conv1d_with_constant_weights(const ir::Node& node);

}  // namespace voxrt::backends::cpu::dense
