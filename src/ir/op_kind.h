// Every operation the IR knows: the ONNX ops voxrt imports plus the fused ops its passes make.
// The numeric ids are stored in engine files: append only, never renumber or reuse.
//
// Fused ops (domain "voxrt"):
//   FusedConv      Conv (same attributes and inputs X, W, [B]) followed by an activation.
//   FusedMatMul    MatMul semantics (batched, broadcasting) with attributes trans_a / trans_b
//                  (transpose the last two dims of an operand), optional input 2 = bias of shape
//                  [N] added to every row, then an activation.
//   FusedPointwise a chain of elementwise ops over broadcasting inputs, as a small register
//                  program (src/ir/pointwise_program.h).
//   Attention      scaled dot-product attention, one layer for every head (issue 26); its exact
//                  semantics are below and bind every backend.
// Activation attributes shared by fused ops: "activation" (string: none, relu, clip, leaky_relu,
// sigmoid, tanh, gelu_erf, silu = x * sigmoid(x); the builder makes silu for CPU engines only
// until the CUDA backend takes it), "activation_alpha" (leaky_relu slope, clip min),
// "activation_beta" (clip max), and "activation_clamp_min" / "activation_clamp_max" (floats,
// present only after an activation: the bounds of a Max / Min / Clip with constant bounds that
// followed it, applied after the activation).
//
// Attention (domain voxrt, id 200; family kAttention). Refined from issue 26's starting point by
// the CPU helper: added `qkv_layout` and `mask_fill`, and said what a fully masked row gives.
//   inputs  0 Q    [B, H, Sq, Dk]
//           1 K    [B, Hkv, Sk, Dk]
//           2 V    [B, Hkv, Sk, Dv]      H must be a multiple of Hkv: query head h reads key/value
//                                        head h / (H / Hkv) (grouped-query attention).
//           3 mask (optional) bool (true = attend) or the dtype of Q (added to the scores);
//                  rank <= 4, broadcastable (numpy, right-aligned) to [B, H, Sq, Sk].
//           4 bias (optional) the dtype of Q, added to the scores (relative-position scores);
//                  rank <= 4, broadcastable to [B, H, Sq, Sk].
//   Q, K and V share one floating dtype; the output has it.
//   attributes
//     scale      float, default 1 / sqrt(Dk).
//     causal     int 0/1, default 0: query i sees key j only when j <= i + Sk - Sq (the last query
//                sees every key; bottom-right aligned, as with a KV cache of Sk - Sq entries).
//     mask_fill  float, default -inf: the score a position with a false bool mask takes. It
//                replaces the score (bias included); it is not added. Ignored for a float mask.
//     qkv_layout int, default 0: 0 = Q, K, V and the output are [B, heads, S, D] as above;
//                1 = they are [B, S, heads, D] (the output [B, Sq, H, Dv]), which saves the
//                transposes around the head split. Mask and bias are [B, H, Sq, Sk] either way.
//   output 0 [B, H, Sq, Dv] (qkv_layout 1: [B, Sq, H, Dv]) =
//     softmax_j(s_ij) V, where s_ij = scale * (Q_i . K_j) + bias_ij, then
//       float mask: s_ij += mask_ij;
//       bool mask:  s_ij = mask_ij ? s_ij : mask_fill;
//       causal:     s_ij = -inf where j > i + Sk - Sq.
//   The softmax's maximum and sum are kept in FP32 (or wider) whatever the dtype of Q. The result
//   equals the unfused graph (MatMul, Mul, Add, Where, Softmax, MatMul), including a row whose
//   every score is -inf (a -inf float mask, a bool mask with mask_fill -inf that is all false,
//   causal with Sq > Sk): such a row gives NaN, as Softmax does. A row whose scores are all
//   mask_fill (finite) gives the mean of V over the keys, as Softmax of equal scores does.
//   Sk = 0 gives NaN rows (an empty softmax), Sq = 0 an empty output.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace voxrt::ir {

// Which kernel/shape-inference family owns an op (one file per family in each backend).
enum class OpFamily : std::uint8_t {
  kElementwise,
  kReduction,     // reductions, softmax, normalizations
  kDataMovement,  // shape ops, transpose, concat, gather, pad, ...
  kPooling,
  kDense,        // conv, gemm, matmul and their fused forms
  kRecurrent,    // GRU, LSTM, RNN
  kControlFlow,  // If
  kAttention,    // Attention (fused scaled dot-product attention)
};

// VOXRT_OP(Enum, "OnnxName", Family, id)
#define VOXRT_FOR_EACH_OP(VOXRT_OP)                                         \
  VOXRT_OP(Identity, "Identity", kElementwise, 1)                           \
  VOXRT_OP(Dropout, "Dropout", kElementwise, 2)                             \
  VOXRT_OP(Relu, "Relu", kElementwise, 3)                                   \
  VOXRT_OP(LeakyRelu, "LeakyRelu", kElementwise, 4)                         \
  VOXRT_OP(Clip, "Clip", kElementwise, 5)                                   \
  VOXRT_OP(Sigmoid, "Sigmoid", kElementwise, 6)                             \
  VOXRT_OP(Tanh, "Tanh", kElementwise, 7)                                   \
  VOXRT_OP(Exp, "Exp", kElementwise, 8)                                     \
  VOXRT_OP(Log, "Log", kElementwise, 9)                                     \
  VOXRT_OP(Sqrt, "Sqrt", kElementwise, 10)                                  \
  VOXRT_OP(Neg, "Neg", kElementwise, 11)                                    \
  VOXRT_OP(Abs, "Abs", kElementwise, 12)                                    \
  VOXRT_OP(Reciprocal, "Reciprocal", kElementwise, 13)                      \
  VOXRT_OP(Erf, "Erf", kElementwise, 14)                                    \
  VOXRT_OP(Floor, "Floor", kElementwise, 15)                                \
  VOXRT_OP(Ceil, "Ceil", kElementwise, 16)                                  \
  VOXRT_OP(Round, "Round", kElementwise, 17)                                \
  VOXRT_OP(Sign, "Sign", kElementwise, 18)                                  \
  VOXRT_OP(Softplus, "Softplus", kElementwise, 19)                          \
  VOXRT_OP(Elu, "Elu", kElementwise, 20)                                    \
  VOXRT_OP(HardSigmoid, "HardSigmoid", kElementwise, 21)                    \
  VOXRT_OP(Sin, "Sin", kElementwise, 22)                                    \
  VOXRT_OP(Cos, "Cos", kElementwise, 23)                                    \
  VOXRT_OP(Not, "Not", kElementwise, 24)                                    \
  VOXRT_OP(Cast, "Cast", kElementwise, 25)                                  \
  VOXRT_OP(Add, "Add", kElementwise, 26)                                    \
  VOXRT_OP(Sub, "Sub", kElementwise, 27)                                    \
  VOXRT_OP(Mul, "Mul", kElementwise, 28)                                    \
  VOXRT_OP(Div, "Div", kElementwise, 29)                                    \
  VOXRT_OP(Pow, "Pow", kElementwise, 30)                                    \
  VOXRT_OP(Max, "Max", kElementwise, 31)                                    \
  VOXRT_OP(Min, "Min", kElementwise, 32)                                    \
  VOXRT_OP(Mod, "Mod", kElementwise, 33)                                    \
  VOXRT_OP(Equal, "Equal", kElementwise, 34)                                \
  VOXRT_OP(Greater, "Greater", kElementwise, 35)                            \
  VOXRT_OP(GreaterOrEqual, "GreaterOrEqual", kElementwise, 36)              \
  VOXRT_OP(Less, "Less", kElementwise, 37)                                  \
  VOXRT_OP(LessOrEqual, "LessOrEqual", kElementwise, 38)                    \
  VOXRT_OP(And, "And", kElementwise, 39)                                    \
  VOXRT_OP(Or, "Or", kElementwise, 40)                                      \
  VOXRT_OP(Xor, "Xor", kElementwise, 41)                                    \
  VOXRT_OP(Where, "Where", kElementwise, 42)                                \
  VOXRT_OP(FusedPointwise, "FusedPointwise", kElementwise, 43)              \
  VOXRT_OP(ReduceMean, "ReduceMean", kReduction, 60)                        \
  VOXRT_OP(ReduceSum, "ReduceSum", kReduction, 61)                          \
  VOXRT_OP(ReduceMax, "ReduceMax", kReduction, 62)                          \
  VOXRT_OP(ReduceMin, "ReduceMin", kReduction, 63)                          \
  VOXRT_OP(ReduceProd, "ReduceProd", kReduction, 64)                        \
  VOXRT_OP(ReduceL2, "ReduceL2", kReduction, 65)                            \
  VOXRT_OP(ReduceSumSquare, "ReduceSumSquare", kReduction, 66)              \
  VOXRT_OP(ReduceLogSumExp, "ReduceLogSumExp", kReduction, 67)              \
  VOXRT_OP(ArgMax, "ArgMax", kReduction, 68)                                \
  VOXRT_OP(Softmax, "Softmax", kReduction, 69)                              \
  VOXRT_OP(LogSoftmax, "LogSoftmax", kReduction, 70)                        \
  VOXRT_OP(LayerNormalization, "LayerNormalization", kReduction, 71)        \
  VOXRT_OP(BatchNormalization, "BatchNormalization", kReduction, 72)        \
  VOXRT_OP(Transpose, "Transpose", kDataMovement, 90)                       \
  VOXRT_OP(Reshape, "Reshape", kDataMovement, 91)                           \
  VOXRT_OP(Flatten, "Flatten", kDataMovement, 92)                           \
  VOXRT_OP(Squeeze, "Squeeze", kDataMovement, 93)                           \
  VOXRT_OP(Unsqueeze, "Unsqueeze", kDataMovement, 94)                       \
  VOXRT_OP(Concat, "Concat", kDataMovement, 95)                             \
  VOXRT_OP(Split, "Split", kDataMovement, 96)                               \
  VOXRT_OP(Slice, "Slice", kDataMovement, 97)                               \
  VOXRT_OP(Gather, "Gather", kDataMovement, 98)                             \
  VOXRT_OP(Pad, "Pad", kDataMovement, 99)                                   \
  VOXRT_OP(Shape, "Shape", kDataMovement, 100)                              \
  VOXRT_OP(Size, "Size", kDataMovement, 101)                                \
  VOXRT_OP(ConstantOfShape, "ConstantOfShape", kDataMovement, 102)          \
  VOXRT_OP(Range, "Range", kDataMovement, 103)                              \
  VOXRT_OP(Expand, "Expand", kDataMovement, 104)                            \
  VOXRT_OP(Tile, "Tile", kDataMovement, 105)                                \
  VOXRT_OP(MaxPool, "MaxPool", kPooling, 120)                               \
  VOXRT_OP(AveragePool, "AveragePool", kPooling, 121)                       \
  VOXRT_OP(GlobalAveragePool, "GlobalAveragePool", kPooling, 122)           \
  VOXRT_OP(GlobalMaxPool, "GlobalMaxPool", kPooling, 123)                   \
  VOXRT_OP(Conv, "Conv", kDense, 140)                                       \
  VOXRT_OP(Gemm, "Gemm", kDense, 141)                                       \
  VOXRT_OP(MatMul, "MatMul", kDense, 142)                                   \
  VOXRT_OP(FusedConv, "FusedConv", kDense, 143)                             \
  VOXRT_OP(FusedMatMul, "FusedMatMul", kDense, 144)                         \
  VOXRT_OP(GRU, "GRU", kRecurrent, 160)                                     \
  VOXRT_OP(LSTM, "LSTM", kRecurrent, 161)                                   \
  VOXRT_OP(RNN, "RNN", kRecurrent, 162)                                     \
  VOXRT_OP(If, "If", kControlFlow, 180)                                     \
  VOXRT_OP(Attention, "Attention", kAttention, 200)                         \
  VOXRT_OP(ScatterND, "ScatterND", kDataMovement, 201)                      \
  VOXRT_OP(ScatterElements, "ScatterElements", kDataMovement, 202)          \
  VOXRT_OP(GatherElements, "GatherElements", kDataMovement, 203)            \
  VOXRT_OP(Trilu, "Trilu", kDataMovement, 204)                              \
  VOXRT_OP(CumSum, "CumSum", kReduction, 205)                               \
  VOXRT_OP(InstanceNormalization, "InstanceNormalization", kReduction, 206) \
  VOXRT_OP(TopK, "TopK", kReduction, 207)                                   \
  VOXRT_OP(Einsum, "Einsum", kDense, 208)

enum class OpKind : std::uint16_t {
#define VOXRT_OP_ENUM(name, onnx_name, family, id) k##name = id,
  VOXRT_FOR_EACH_OP(VOXRT_OP_ENUM)
#undef VOXRT_OP_ENUM
};

std::string_view op_name(OpKind op);
OpFamily op_family(OpKind op);
std::string_view op_family_name(OpFamily family);
// The op for an ONNX op type in the default domain, or nullopt.
std::optional<OpKind> op_from_onnx_name(std::string_view onnx_op_type);
// The op for a stored id, or nullopt for an id this build does not know (a newer engine file).
std::optional<OpKind> op_from_id(std::uint16_t id);
// Ops of the voxrt domain (made by passes, never imported): FusedConv, FusedMatMul,
// FusedPointwise, Attention.
bool is_voxrt_domain_op(OpKind op);

}  // namespace voxrt::ir
