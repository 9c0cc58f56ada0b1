// The typed elementwise kernels (element_ops.h): one grid-stride kernel template per op family,
// instantiated per element type; the per-element rules are element_math.h's, shared with the
// host so a unit test holds them to the IR's.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "backends/cuda/element_math.h"
#include "backends/cuda/element_ops.h"
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

namespace em = element_math;

constexpr int kThreads = 256;

// Storage type -> the type the math runs in (halves in float).
template <typename S>
struct ComputeOf {
  using type = S;
};
template <>
struct ComputeOf<__half> {
  using type = float;
};
template <>
struct ComputeOf<__nv_bfloat16> {
  using type = float;
};
template <typename S>
using compute_t = typename ComputeOf<S>::type;

template <typename S>
__device__ __forceinline__ compute_t<S> load(S v) {
  if constexpr (std::is_same_v<S, __half>)
    return __half2float(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __bfloat162float(v);
  else
    return v;
}
template <typename S>
__device__ __forceinline__ S store(compute_t<S> v) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(v);
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(v);
  else
    return v;
}

// Calls f(S{}) with the storage type of `type`.
template <typename F>
cudaError_t with_storage(ElemType type, F&& f) {
  switch (type) {
    case ElemType::kF32: return f(float{});
    case ElemType::kF16: return f(__half{});
    case ElemType::kBF16: return f(__nv_bfloat16{});
    case ElemType::kI8: return f(std::int8_t{});
    case ElemType::kU8: return f(std::uint8_t{});
    case ElemType::kI32: return f(std::int32_t{});
    case ElemType::kI64: return f(std::int64_t{});
    case ElemType::kBool: return f(bool{});
  }
  return cudaErrorInvalidValue;
}

// ---- unary ----------------------------------------------------------------------------------

__device__ __forceinline__ float float_unary(TypedUnaryOp op, float x, double alpha, double beta) {
  const auto a = static_cast<float>(alpha), b = static_cast<float>(beta);
  switch (op) {
    case TypedUnaryOp::kIdentity: return x;
    case TypedUnaryOp::kNeg: return -x;
    case TypedUnaryOp::kAbs: return fabsf(x);
    case TypedUnaryOp::kRelu: return em::relu(x);
    case TypedUnaryOp::kSign: return em::sign(x);
    case TypedUnaryOp::kClip: return em::clip(x, alpha, beta);
    case TypedUnaryOp::kNot: return x;
    case TypedUnaryOp::kRound: return em::round_half_even(x);
    case TypedUnaryOp::kFloor: return floorf(x);
    case TypedUnaryOp::kCeil: return ceilf(x);
    case TypedUnaryOp::kSqrt: return sqrtf(x);
    case TypedUnaryOp::kExp: return expf(x);
    case TypedUnaryOp::kLog: return logf(x);
    case TypedUnaryOp::kSin: return sinf(x);
    case TypedUnaryOp::kCos: return cosf(x);
    case TypedUnaryOp::kReciprocal: return 1.0f / x;
    case TypedUnaryOp::kErf: return erff(x);
    case TypedUnaryOp::kSigmoid: return apply_unary(UnaryOp::kSigmoid, x, a, b);
    case TypedUnaryOp::kTanh: return tanhf(x);
    case TypedUnaryOp::kSoftplus: return apply_unary(UnaryOp::kSoftplus, x, a, b);
    case TypedUnaryOp::kLeakyRelu: return apply_unary(UnaryOp::kLeakyRelu, x, a, b);
    case TypedUnaryOp::kElu: return apply_unary(UnaryOp::kElu, x, a, b);
    case TypedUnaryOp::kHardSigmoid: return apply_unary(UnaryOp::kHardSigmoid, x, a, b);
  }
  return x;
}

template <typename C>
__device__ __forceinline__ C unary_value(TypedUnaryOp op, C x, double alpha, double beta) {
  if constexpr (std::is_same_v<C, bool>) {
    return op == TypedUnaryOp::kNot ? !x : x;
  } else if constexpr (std::is_floating_point_v<C>) {
    return float_unary(op, x, alpha, beta);
  } else {
    switch (op) {
      case TypedUnaryOp::kNeg: return em::neg(x);
      case TypedUnaryOp::kAbs: return em::abs_value(x);
      case TypedUnaryOp::kRelu: return em::relu(x);
      case TypedUnaryOp::kSign: return em::sign(x);
      case TypedUnaryOp::kClip: return em::clip(x, alpha, beta);
      default: return x;
    }
  }
}

template <typename S>
__global__ void typed_unary_kernel(TypedUnaryOp op, double alpha, double beta, const S* x, S* y,
                                   std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = store<S>(unary_value<compute_t<S>>(op, load(x[i]), alpha, beta));
}

// ---- binary ---------------------------------------------------------------------------------

template <typename C>
__device__ __forceinline__ bool compare_value(TypedBinaryOp op, C a, C b) {
  switch (op) {
    case TypedBinaryOp::kEqual: return a == b;
    case TypedBinaryOp::kGreater: return a > b;
    case TypedBinaryOp::kGreaterOrEqual: return a >= b;
    case TypedBinaryOp::kLess: return a < b;
    case TypedBinaryOp::kLessOrEqual: return a <= b;
    case TypedBinaryOp::kAnd: return static_cast<bool>(a) && static_cast<bool>(b);
    case TypedBinaryOp::kOr: return static_cast<bool>(a) || static_cast<bool>(b);
    case TypedBinaryOp::kXor: return static_cast<bool>(a) != static_cast<bool>(b);
    default: return false;
  }
}

// CA: a's (and the result's) compute type, CB: b's (differs only for Pow's exponent).
template <typename CA, typename CB>
__device__ __forceinline__ CA arith_value(TypedBinaryOp op, CA a, CB b) {
  if (op == TypedBinaryOp::kPow) return em::power(a, b);
  if constexpr (std::is_same_v<CA, CB>) {
    switch (op) {
      case TypedBinaryOp::kAdd: return em::add(a, b);
      case TypedBinaryOp::kSub: return em::sub(a, b);
      case TypedBinaryOp::kMul: return em::mul(a, b);
      case TypedBinaryOp::kDiv: return em::div(a, b);
      case TypedBinaryOp::kMod: return em::mod(a, b, false);
      case TypedBinaryOp::kFmod: return em::mod(a, b, true);
      case TypedBinaryOp::kMax: return em::max_value(a, b);
      case TypedBinaryOp::kMin: return em::min_value(a, b);
      default: break;
    }
  }
  return a;
}

template <typename SA, typename SB>
__global__ void typed_binary_kernel(TypedBinaryOp op, const SA* a, const SB* b, void* y,
                                    std::int64_t n, BroadcastIndex index) {
  const bool writes_bool = typed_binary_writes_bool(op);
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, oa = 0, ob = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const std::int64_t coord = rest % index.dims[d];
      rest /= index.dims[d];
      oa += coord * index.stride_a[d];
      ob += coord * index.stride_b[d];
    }
    const compute_t<SA> va = load(a[oa]);
    const compute_t<SB> vb = load(b[ob]);
    if (writes_bool) {
      if constexpr (std::is_same_v<compute_t<SA>, compute_t<SB>>)
        static_cast<bool*>(y)[i] = compare_value(op, va, vb);
    } else if constexpr (!std::is_same_v<SA, bool>) {
      static_cast<SA*>(y)[i] = store<SA>(arith_value(op, va, vb));
    }
  }
}

template <typename SA, typename SB>
cudaError_t launch_binary(TypedBinaryOp op, const void* a, const void* b, void* y, std::int64_t n,
                          const BroadcastIndex& index, cudaStream_t stream) {
  typed_binary_kernel<SA, SB><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
      op, static_cast<const SA*>(a), static_cast<const SB*>(b), y, n, index);
  return cudaGetLastError();
}

// ---- Where, Cast, fill, Range ---------------------------------------------------------------

template <typename T>
__global__ void where_kernel(const bool* cond, const T* x, const T* y, T* out, std::int64_t n,
                             WhereIndex index) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, oc = 0, ox = 0, oy = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const std::int64_t coord = rest % index.dims[d];
      rest /= index.dims[d];
      oc += coord * index.stride_cond[d];
      ox += coord * index.stride_x[d];
      oy += coord * index.stride_y[d];
    }
    out[i] = cond[oc] ? x[ox] : y[oy];
  }
}

template <typename From, typename To>
__global__ void cast_kernel(const From* x, To* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<From, To>) {
      y[i] = x[i];
    } else {
      // Halves are floats on either side; everything else follows element_math.h's cast.
      y[i] = store<To>(em::cast<compute_t<To>>(load(x[i])));
    }
  }
}

template <typename T>
__global__ void fill_kernel(T* y, T value, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    y[i] = value;
}

template <typename T>
__global__ void range_kernel(const T* start, const T* delta, T* y, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<T, float>) {
      // The CPU kernel's sequence: delta added i times in float, not start + i * delta.
      float value = *start;
      const float step = *delta;
      for (std::int64_t k = 0; k < i; ++k) value += step;
      y[i] = value;
    } else {
      y[i] = em::add(*start, em::mul(static_cast<T>(i), *delta));
    }
  }
}

}  // namespace

cudaError_t typed_unary(TypedUnaryOp op, ElemType type, double alpha, double beta, const void* x,
                        void* y, std::int64_t n, cudaStream_t stream) {
  if (!typed_unary_takes(op, type)) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  return with_storage(type, [&](auto tag) {
    using S = decltype(tag);
    typed_unary_kernel<S><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
        op, alpha, beta, static_cast<const S*>(x), static_cast<S*>(y), n);
    return cudaGetLastError();
  });
}

bool typed_binary_takes(TypedBinaryOp op, ElemType type, ElemType b_type) {
  const bool is_bool = type == ElemType::kBool;
  switch (op) {
    case TypedBinaryOp::kAnd:
    case TypedBinaryOp::kOr:
    case TypedBinaryOp::kXor: return is_bool && b_type == ElemType::kBool;
    case TypedBinaryOp::kEqual: return type == b_type;
    case TypedBinaryOp::kPow: {
      const bool exponent_ok = b_type == ElemType::kF32 || b_type == ElemType::kI32 ||
                               b_type == ElemType::kI64 || b_type == type;
      return !is_bool && exponent_ok && b_type != ElemType::kBool;
    }
    default: return !is_bool && type == b_type;
  }
}

cudaError_t typed_binary(TypedBinaryOp op, ElemType type, ElemType b_type, const void* a,
                         const void* b, void* y, std::int64_t n, const BroadcastIndex& index,
                         cudaStream_t stream) {
  if (!typed_binary_takes(op, type, b_type)) return cudaErrorInvalidValue;
  if (n <= 0) return cudaSuccess;
  return with_storage(type, [&](auto a_tag) {
    using SA = decltype(a_tag);
    if (b_type == type) return launch_binary<SA, SA>(op, a, b, y, n, index, stream);
    // Pow with another exponent type (typed_binary_takes allows f32, i32, i64 only).
    if constexpr (std::is_same_v<SA, bool>) {
      return cudaErrorInvalidValue;
    } else {
      switch (b_type) {
        case ElemType::kF32: return launch_binary<SA, float>(op, a, b, y, n, index, stream);
        case ElemType::kI32: return launch_binary<SA, std::int32_t>(op, a, b, y, n, index, stream);
        case ElemType::kI64: return launch_binary<SA, std::int64_t>(op, a, b, y, n, index, stream);
        default: return cudaErrorInvalidValue;
      }
    }
  });
}

cudaError_t where(const bool* cond, const void* x, const void* y, void* out, int element_bytes,
                  std::int64_t n, const WhereIndex& index, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const unsigned grid = grid_stride_blocks(n, kThreads);
  switch (element_bytes) {
    case 1:
      where_kernel<<<grid, kThreads, 0, stream>>>(cond, static_cast<const std::uint8_t*>(x),
                                                  static_cast<const std::uint8_t*>(y),
                                                  static_cast<std::uint8_t*>(out), n, index);
      break;
    case 2:
      where_kernel<<<grid, kThreads, 0, stream>>>(cond, static_cast<const std::uint16_t*>(x),
                                                  static_cast<const std::uint16_t*>(y),
                                                  static_cast<std::uint16_t*>(out), n, index);
      break;
    case 4:
      where_kernel<<<grid, kThreads, 0, stream>>>(cond, static_cast<const std::uint32_t*>(x),
                                                  static_cast<const std::uint32_t*>(y),
                                                  static_cast<std::uint32_t*>(out), n, index);
      break;
    case 8:
      where_kernel<<<grid, kThreads, 0, stream>>>(cond, static_cast<const std::uint64_t*>(x),
                                                  static_cast<const std::uint64_t*>(y),
                                                  static_cast<std::uint64_t*>(out), n, index);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t cast(ElemType from, ElemType to, const void* x, void* y, std::int64_t n,
                 cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return with_storage(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    return with_storage(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      cast_kernel<From, To><<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
          static_cast<const From*>(x), static_cast<To*>(y), n);
      return cudaGetLastError();
    });
  });
}

cudaError_t fill(void* y, int element_bytes, std::uint64_t pattern, std::int64_t n,
                 cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const unsigned grid = grid_stride_blocks(n, kThreads);
  switch (element_bytes) {
    case 1:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint8_t*>(y),
                                                 static_cast<std::uint8_t>(pattern), n);
      break;
    case 2:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint16_t*>(y),
                                                 static_cast<std::uint16_t>(pattern), n);
      break;
    case 4:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint32_t*>(y),
                                                 static_cast<std::uint32_t>(pattern), n);
      break;
    case 8:
      fill_kernel<<<grid, kThreads, 0, stream>>>(static_cast<std::uint64_t*>(y), pattern, n);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t range(ElemType type, const void* start, const void* delta, void* y, std::int64_t n,
                  cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const unsigned grid = grid_stride_blocks(n, kThreads);
  switch (type) {
    case ElemType::kF32:
      range_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(start),
                                                  static_cast<const float*>(delta),
                                                  static_cast<float*>(y), n);
      break;
    case ElemType::kI32:
      range_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::int32_t*>(start),
                                                  static_cast<const std::int32_t*>(delta),
                                                  static_cast<std::int32_t*>(y), n);
      break;
    case ElemType::kI64:
      range_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::int64_t*>(start),
                                                  static_cast<const std::int64_t*>(delta),
                                                  static_cast<std::int64_t*>(y), n);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
