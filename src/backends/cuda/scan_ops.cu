// CumSum, TopK and InstanceNormalization on the device (scan_ops.h).
#include <cstdint>
#include <type_traits>

#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/scan_ops.h"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

template <typename T>
__device__ __forceinline__ T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a) +
                          static_cast<std::make_unsigned_t<T>>(b));
  else
    return a + b;
}

template <typename T>
__global__ void cumsum_kernel(const T* x, T* y, std::int64_t outer, std::int64_t n,
                              std::int64_t inner, bool exclusive, bool reverse) {
  const std::int64_t lines = outer * inner;
  for (std::int64_t line = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       line < lines; line += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t o = line / inner, i = line % inner;
    T sum = T(0);
    for (std::int64_t step = 0; step < n; ++step) {
      const std::int64_t r = reverse ? n - 1 - step : step;
      const std::int64_t at = (o * n + r) * inner + i;
      const T v = x[at];
      if (exclusive) {
        y[at] = sum;
        sum = wrapping_add(sum, v);
      } else {
        sum = wrapping_add(sum, v);
        y[at] = sum;
      }
    }
  }
}

// Whether (va, a) comes before (vb, b) in TopK's order.
template <typename T>
__device__ __forceinline__ bool before(T va, std::int64_t a, T vb, std::int64_t b, bool largest) {
  if (va != vb) return largest ? va > vb : va < vb;
  return a < b;
}

// One block per line: k rounds, each finding the first element (in TopK's order) that comes after
// the one picked last.
template <typename T>
__global__ void top_k_kernel(const T* x, T* values, std::int64_t* indices, std::int64_t n,
                             std::int64_t inner, std::int64_t k, bool largest) {
  __shared__ T best_value[kThreads / 32];
  __shared__ std::int64_t best_index[kThreads / 32];
  const std::int64_t o = blockIdx.x / inner, i = blockIdx.x % inner;
  const T* line = x + o * n * inner + i;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  T last_value = T(0);
  std::int64_t last_index = -1;
  for (std::int64_t round = 0; round < k; ++round) {
    T mine = T(0);
    std::int64_t mine_index = -1;
    for (std::int64_t r = threadIdx.x; r < n; r += blockDim.x) {
      const T v = line[r * inner];
      if (last_index >= 0 && !before(last_value, last_index, v, r, largest)) continue;
      if (mine_index < 0 || before(v, r, mine, mine_index, largest)) {
        mine = v;
        mine_index = r;
      }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
      const T other = __shfl_xor_sync(0xffffffffu, mine, offset);
      const std::int64_t other_index = __shfl_xor_sync(0xffffffffu, mine_index, offset);
      if (other_index >= 0 &&
          (mine_index < 0 || before(other, other_index, mine, mine_index, largest))) {
        mine = other;
        mine_index = other_index;
      }
    }
    if (lane == 0) {
      best_value[warp] = mine;
      best_index[warp] = mine_index;
    }
    __syncthreads();
    T pick = best_value[0];
    std::int64_t pick_index = best_index[0];
    for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) {
      if (best_index[w] >= 0 &&
          (pick_index < 0 || before(best_value[w], best_index[w], pick, pick_index, largest))) {
        pick = best_value[w];
        pick_index = best_index[w];
      }
    }
    __syncthreads();  // the next round overwrites best_*
    if (threadIdx.x == 0) {
      values[(o * k + round) * inner + i] = pick;
      indices[(o * k + round) * inner + i] = pick_index;
    }
    last_value = pick;
    last_index = pick_index;
  }
}

__device__ __forceinline__ double block_sum(double v, double* shared) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  double total = 0.0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += shared[w];
  return total;
}

__global__ void instance_norm_kernel(const float* x, const float* scale, const float* bias,
                                     float* y, std::int64_t channels, std::int64_t spatial,
                                     float epsilon) {
  __shared__ double partial[kThreads / 32];
  const std::int64_t slab = blockIdx.x;
  const float* in = x + slab * spatial;
  float* out = y + slab * spatial;
  double sum = 0.0;
  for (std::int64_t e = threadIdx.x; e < spatial; e += blockDim.x) sum += in[e];
  const double mean = block_sum(sum, partial) / static_cast<double>(spatial);
  double squares = 0.0;
  for (std::int64_t e = threadIdx.x; e < spatial; e += blockDim.x)
    squares += (in[e] - mean) * (in[e] - mean);
  const double variance = block_sum(squares, partial) / static_cast<double>(spatial);
  const std::int64_t c = slab % channels;
  const double gain = scale[c] / sqrt(variance + static_cast<double>(epsilon));
  const double shift = bias[c];
  for (std::int64_t e = threadIdx.x; e < spatial; e += blockDim.x)
    out[e] = static_cast<float>((in[e] - mean) * gain + shift);
}

template <typename F>
cudaError_t with_numeric(ElemType type, F&& f) {
  switch (type) {
    case ElemType::kF32: return f(float{});
    case ElemType::kI32: return f(std::int32_t{});
    case ElemType::kI64: return f(std::int64_t{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace

cudaError_t cumsum(ElemType type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                   std::int64_t inner, bool exclusive, bool reverse, cudaStream_t stream) {
  const std::int64_t lines = outer * inner;
  if (lines <= 0 || n <= 0) return cudaSuccess;
  return with_numeric(type, [&](auto tag) {
    using T = decltype(tag);
    cumsum_kernel<T><<<grid_stride_blocks(lines, kThreads), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(y), outer, n, inner, exclusive, reverse);
    return cudaGetLastError();
  });
}

cudaError_t top_k(ElemType type, const void* x, void* values, std::int64_t* indices,
                  std::int64_t outer, std::int64_t n, std::int64_t inner, std::int64_t k,
                  bool largest, cudaStream_t stream) {
  const std::int64_t lines = outer * inner;
  if (lines <= 0 || k <= 0) return cudaSuccess;
  if (k > n || lines > 0x7fffffff) return cudaErrorInvalidValue;
  return with_numeric(type, [&](auto tag) {
    using T = decltype(tag);
    top_k_kernel<T><<<static_cast<unsigned>(lines), kThreads, 0, stream>>>(
        static_cast<const T*>(x), static_cast<T*>(values), indices, n, inner, k, largest);
    return cudaGetLastError();
  });
}

cudaError_t instance_norm(const float* x, const float* scale, const float* bias, float* y,
                          std::int64_t slabs, std::int64_t channels, std::int64_t spatial,
                          float epsilon, cudaStream_t stream) {
  if (slabs <= 0 || spatial <= 0) return cudaSuccess;
  if (slabs > 0x7fffffff) return cudaErrorInvalidValue;
  instance_norm_kernel<<<static_cast<unsigned>(slabs), kThreads, 0, stream>>>(
      x, scale, bias, y, channels, spatial, epsilon);
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
