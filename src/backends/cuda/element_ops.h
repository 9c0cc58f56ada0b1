// Launchers of the typed elementwise kernels (typed_elementwise.cu): the ops on every element
// type (f16, bf16, i8, u8, i32, i64, bool besides f32) that Transformer exports carry in their
// masks and index arithmetic: comparisons, logic, Where, Cast, integer arithmetic, Range,
// ConstantOfShape. Plain types only, as cuda_ops.h. The per-element rules are element_math.h's.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_ops.h"

namespace voxrt::backends::cuda::ops {

enum class ElemType : int { kF32, kF16, kBF16, kI8, kU8, kI32, kI64, kBool };

constexpr int elem_type_bytes(ElemType type) {
  switch (type) {
    case ElemType::kF32:
    case ElemType::kI32: return 4;
    case ElemType::kF16:
    case ElemType::kBF16: return 2;
    case ElemType::kI64: return 8;
    case ElemType::kI8:
    case ElemType::kU8:
    case ElemType::kBool: return 1;
  }
  return 0;
}
constexpr bool elem_type_is_float(ElemType type) {
  return type == ElemType::kF32 || type == ElemType::kF16 || type == ElemType::kBF16;
}

// Float types compute every op in float (halves rounded back on the way out); integer types take
// kIdentity, kNeg, kAbs, kRelu, kSign and kClip; bool takes kIdentity and kNot.
enum class TypedUnaryOp : int {
  kIdentity,
  kNeg,
  kAbs,
  kRelu,
  kSign,
  kClip,  // alpha = min, beta = max (converted to the element type, saturating)
  kNot,
  kRound,  // halves to even
  kFloor,
  kCeil,
  kSqrt,
  kExp,
  kLog,
  kSin,
  kCos,
  kReciprocal,
  kErf,
  kSigmoid,
  kTanh,
  kSoftplus,
  kLeakyRelu,    // alpha
  kElu,          // alpha
  kHardSigmoid,  // alpha, beta
};
// Whether `op` is defined for elements of `type` (the rules above).
constexpr bool typed_unary_takes(TypedUnaryOp op, ElemType type) {
  if (type == ElemType::kBool) return op == TypedUnaryOp::kIdentity || op == TypedUnaryOp::kNot;
  if (elem_type_is_float(type)) return op != TypedUnaryOp::kNot;
  return op == TypedUnaryOp::kIdentity || op == TypedUnaryOp::kNeg || op == TypedUnaryOp::kAbs ||
         op == TypedUnaryOp::kRelu || op == TypedUnaryOp::kSign || op == TypedUnaryOp::kClip;
}
cudaError_t typed_unary(TypedUnaryOp op, ElemType type, double alpha, double beta, const void* x,
                        void* y, std::int64_t n, cudaStream_t stream);

enum class TypedBinaryOp : int {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMod,   // the sign of the divisor (Python)
  kFmod,  // the sign of the dividend (C)
  kPow,   // b may have another type (the exponent)
  kMax,
  kMin,
  kEqual,  // comparisons and logic write bool
  kGreater,
  kGreaterOrEqual,
  kLess,
  kLessOrEqual,
  kAnd,  // bool only
  kOr,
  kXor,
};
constexpr bool typed_binary_writes_bool(TypedBinaryOp op) {
  return op >= TypedBinaryOp::kEqual;
}
// y[i] = op(a[.], b[.]) with numpy broadcasting (index.stride_a / stride_b per output dim). a and
// y (unless bool) of `type`, b of `b_type` (== type except for Pow). Unsupported type
// combinations (typed_binary_takes) return cudaErrorInvalidValue before anything is enqueued.
bool typed_binary_takes(TypedBinaryOp op, ElemType type, ElemType b_type);
cudaError_t typed_binary(TypedBinaryOp op, ElemType type, ElemType b_type, const void* a,
                         const void* b, void* y, std::int64_t n, const BroadcastIndex& index,
                         cudaStream_t stream);

// out[i] = cond[.] ? x[.] : y[.] with numpy broadcasting over all three; any element size.
struct WhereIndex {
  int rank = 0;
  std::int64_t dims[kMaxRank] = {};
  std::int64_t stride_cond[kMaxRank] = {};
  std::int64_t stride_x[kMaxRank] = {};
  std::int64_t stride_y[kMaxRank] = {};
};
cudaError_t where(const bool* cond, const void* x, const void* y, void* out, int element_bytes,
                  std::int64_t n, const WhereIndex& index, cudaStream_t stream);

// y[i] = x[i] converted (element_math.h: float -> integer truncates and saturates, NaN -> 0;
// integer -> integer wraps; x -> bool is x != 0; halves through float, round to nearest even).
cudaError_t cast(ElemType from, ElemType to, const void* x, void* y, std::int64_t n,
                 cudaStream_t stream);

// Every element of y = the `element_bytes` low bytes of `pattern` (ConstantOfShape).
cudaError_t fill(void* y, int element_bytes, std::uint64_t pattern, std::int64_t n,
                 cudaStream_t stream);

// Range with start and delta read on the device (one element each, of `type`: f32, i32, i64):
// y[i] = start + i * delta; f32 accumulates delta i times in float, as the CPU kernel and
// onnxruntime do, so the values match bit for bit.
cudaError_t range(ElemType type, const void* start, const void* delta, void* y, std::int64_t n,
                  cudaStream_t stream);

// Reductions over the middle axis of x [outer, extent, inner] into y [outer, inner], one thread
// per output walking the axis (typed_reduce.cu), with the CPU reference's rules: float types
// (f32, f16, bf16) accumulate in double; integer types (i32, i64) take kSum, kMax, kMin and kProd
// in wrapping 64-bit arithmetic; an empty Max / Min gives the type's extreme (-inf / +inf for
// floats), an empty Mean NaN. kArgMax writes i64 indices (the first maximum, or the last one with
// select_last_index) of f32, f16, bf16, i32 or i64 values.
enum class TypedReduceOp : int {
  kSum,
  kMean,
  kMax,
  kMin,
  kProd,
  kL2,
  kSumSquare,
  kLogSumExp,
  kArgMax,
};
constexpr bool typed_reduce_takes(TypedReduceOp op, ElemType type) {
  if (op == TypedReduceOp::kArgMax)
    return elem_type_is_float(type) || type == ElemType::kI32 || type == ElemType::kI64;
  if (elem_type_is_float(type)) return true;
  return (type == ElemType::kI32 || type == ElemType::kI64) &&
         (op == TypedReduceOp::kSum || op == TypedReduceOp::kMax || op == TypedReduceOp::kMin ||
          op == TypedReduceOp::kProd);
}
cudaError_t typed_reduce(TypedReduceOp op, ElemType type, const void* x, void* y,
                         std::int64_t outer, std::int64_t extent, std::int64_t inner,
                         bool select_last_index, cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
