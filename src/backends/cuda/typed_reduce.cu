// Typed reductions and ArgMax (element_ops.h): one thread per output position walking the reduced
// axis, with the accumulation rules of the CPU's reference kernel (double for floats, wrapping
// 64-bit integers), for the reductions the f32 kernels of pool_reduce_ops.cu do not take.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/element_ops.h"
#include "backends/cuda/grid_stride.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

template <typename S>
__device__ __forceinline__ double as_double(S v) {
  if constexpr (std::is_same_v<S, __half>)
    return static_cast<double>(__half2float(v));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return static_cast<double>(__bfloat162float(v));
  else
    return static_cast<double>(v);
}
template <typename S>
__device__ __forceinline__ S from_double(double v) {
  if constexpr (std::is_same_v<S, __half>)
    return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<S, __nv_bfloat16>)
    return __float2bfloat16_rn(static_cast<float>(v));
  else
    return static_cast<S>(v);
}

template <typename S>
__global__ void reduce_float_kernel(TypedReduceOp op, const S* x, S* y, std::int64_t outer,
                                    std::int64_t extent, std::int64_t inner) {
  const std::int64_t n = outer * inner;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const S* column = x + (i / inner) * extent * inner + i % inner;
    double a = 0.0;
    if (op == TypedReduceOp::kMax || op == TypedReduceOp::kLogSumExp) a = -INFINITY;
    if (op == TypedReduceOp::kMin) a = INFINITY;
    if (op == TypedReduceOp::kProd) a = 1.0;
    for (std::int64_t r = 0; r < extent; ++r) {
      const double v = as_double(column[r * inner]);
      switch (op) {
        case TypedReduceOp::kMax:
        case TypedReduceOp::kLogSumExp: a = v > a ? v : a; break;
        case TypedReduceOp::kMin: a = v < a ? v : a; break;
        case TypedReduceOp::kProd: a *= v; break;
        case TypedReduceOp::kL2:
        case TypedReduceOp::kSumSquare: a += v * v; break;
        default: a += v; break;
      }
    }
    if (op == TypedReduceOp::kLogSumExp && isfinite(a)) {
      // log(sum(exp(x))) = max + log(sum(exp(x - max))), which cannot overflow.
      double sum = 0.0;
      for (std::int64_t r = 0; r < extent; ++r) sum += exp(as_double(column[r * inner]) - a);
      a += log(sum);
    }
    if (op == TypedReduceOp::kMean) a /= static_cast<double>(extent);
    if (op == TypedReduceOp::kL2) a = sqrt(a);
    y[i] = from_double<S>(a);
  }
}

template <typename T>
__global__ void reduce_integer_kernel(TypedReduceOp op, const T* x, T* y, std::int64_t outer,
                                      std::int64_t extent, std::int64_t inner) {
  const std::int64_t n = outer * inner;
  constexpr std::int64_t kLowest = std::is_same_v<T, std::int32_t> ? INT32_MIN : INT64_MIN;
  constexpr std::int64_t kHighest = std::is_same_v<T, std::int32_t> ? INT32_MAX : INT64_MAX;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const T* column = x + (i / inner) * extent * inner + i % inner;
    // Unsigned arithmetic wraps like two's complement instead of being undefined.
    std::uint64_t a = 0;
    if (op == TypedReduceOp::kProd) a = 1;
    if (op == TypedReduceOp::kMax) a = static_cast<std::uint64_t>(INT64_MIN);
    if (op == TypedReduceOp::kMin) a = static_cast<std::uint64_t>(INT64_MAX);
    for (std::int64_t r = 0; r < extent; ++r) {
      const auto v = static_cast<std::int64_t>(column[r * inner]);
      const auto current = static_cast<std::int64_t>(a);
      switch (op) {
        case TypedReduceOp::kSum: a += static_cast<std::uint64_t>(v); break;
        case TypedReduceOp::kProd: a *= static_cast<std::uint64_t>(v); break;
        case TypedReduceOp::kMax: a = static_cast<std::uint64_t>(v > current ? v : current); break;
        default: a = static_cast<std::uint64_t>(v < current ? v : current); break;
      }
    }
    std::int64_t v = static_cast<std::int64_t>(a);
    // An empty Max / Min gives the type's extreme, as for floats (-inf / +inf).
    if (op == TypedReduceOp::kMax && v < kLowest) v = kLowest;
    if (op == TypedReduceOp::kMin && v > kHighest) v = kHighest;
    y[i] = static_cast<T>(v);
  }
}

template <typename S>
__global__ void arg_max_kernel(const S* x, std::int64_t* y, std::int64_t outer, std::int64_t extent,
                               std::int64_t inner, bool select_last) {
  const std::int64_t n = outer * inner;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // Integers compare as themselves (i64 beyond 2^53 would not survive a double).
    using C = std::conditional_t<std::is_integral_v<S>, S, double>;
    const S* column = x + (i / inner) * extent * inner + i % inner;
    C best;
    if constexpr (std::is_integral_v<S>)
      best = column[0];
    else
      best = as_double(column[0]);
    std::int64_t best_index = 0;
    for (std::int64_t r = 1; r < extent; ++r) {
      C v;
      if constexpr (std::is_integral_v<S>)
        v = column[r * inner];
      else
        v = as_double(column[r * inner]);
      if (select_last ? v >= best : v > best) {
        best = v;
        best_index = r;
      }
    }
    y[i] = best_index;
  }
}

}  // namespace

cudaError_t typed_reduce(TypedReduceOp op, ElemType type, const void* x, void* y,
                         std::int64_t outer, std::int64_t extent, std::int64_t inner,
                         bool select_last_index, cudaStream_t stream) {
  if (!typed_reduce_takes(op, type)) return cudaErrorInvalidValue;
  const std::int64_t n = outer * inner;
  if (n <= 0) return cudaSuccess;
  if (op == TypedReduceOp::kArgMax && extent <= 0) return cudaErrorInvalidValue;
  const unsigned grid = grid_stride_blocks(n, kThreads);
  auto* indices = static_cast<std::int64_t*>(y);
  switch (type) {
    case ElemType::kF32:
      if (op == TypedReduceOp::kArgMax) {
        arg_max_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const float*>(x), indices, outer,
                                                      extent, inner, select_last_index);
      } else {
        reduce_float_kernel<<<grid, kThreads, 0, stream>>>(
            op, static_cast<const float*>(x), static_cast<float*>(y), outer, extent, inner);
      }
      break;
    case ElemType::kF16:
      if (op == TypedReduceOp::kArgMax) {
        arg_max_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(x), indices, outer,
                                                      extent, inner, select_last_index);
      } else {
        reduce_float_kernel<<<grid, kThreads, 0, stream>>>(
            op, static_cast<const __half*>(x), static_cast<__half*>(y), outer, extent, inner);
      }
      break;
    case ElemType::kBF16:
      if (op == TypedReduceOp::kArgMax) {
        arg_max_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const __nv_bfloat16*>(x), indices,
                                                      outer, extent, inner, select_last_index);
      } else {
        reduce_float_kernel<<<grid, kThreads, 0, stream>>>(op, static_cast<const __nv_bfloat16*>(x),
                                                           static_cast<__nv_bfloat16*>(y), outer,
                                                           extent, inner);
      }
      break;
    case ElemType::kI32:
      if (op == TypedReduceOp::kArgMax) {
        arg_max_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::int32_t*>(x), indices,
                                                      outer, extent, inner, select_last_index);
      } else {
        reduce_integer_kernel<<<grid, kThreads, 0, stream>>>(
            op, static_cast<const std::int32_t*>(x), static_cast<std::int32_t*>(y), outer, extent,
            inner);
      }
      break;
    case ElemType::kI64:
      if (op == TypedReduceOp::kArgMax) {
        arg_max_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::int64_t*>(x), indices,
                                                      outer, extent, inner, select_last_index);
      } else {
        reduce_integer_kernel<<<grid, kThreads, 0, stream>>>(
            op, static_cast<const std::int64_t*>(x), static_cast<std::int64_t*>(y), outer, extent,
            inner);
      }
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
