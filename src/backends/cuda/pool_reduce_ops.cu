// Pooling and axis reductions of the CUDA backend (cuda_ops.h: pool2d, reduce).
#include <cfloat>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/grid_stride.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::int64_t n) {
  return grid_stride_blocks(n, kThreads);
}

__global__ void pool2d_kernel(Pool2d s, const float* __restrict__ x, float* __restrict__ y) {
  const std::int64_t total = s.planes * s.out_h * s.out_w;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t ow = i % s.out_w, oh = (i / s.out_w) % s.out_h,
                       plane = i / (s.out_w * s.out_h);
    const float* src = x + plane * s.in_h * s.in_w;
    float best = -FLT_MAX, sum = 0.0f;
    bool any = false;
    std::int64_t valid = 0, padded = 0;
    for (std::int64_t kh = 0; kh < s.kernel_h; ++kh) {
      const std::int64_t ih = oh * s.stride_h - s.pad_h + kh * s.dilation_h;
      for (std::int64_t kw = 0; kw < s.kernel_w; ++kw) {
        const std::int64_t iw = ow * s.stride_w - s.pad_w + kw * s.dilation_w;
        if (ih >= -s.pad_h && ih < s.in_h + s.pad_end_h && iw >= -s.pad_w &&
            iw < s.in_w + s.pad_end_w)
          ++padded;
        if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
        const float v = src[ih * s.in_w + iw];
        ++valid;
        // The CPU oracle's rule: the first tap, then any larger one.
        if (!any || v > best) best = v;
        any = true;
        sum += v;
      }
    }
    if (s.max) {
      y[i] = best;
    } else {
      const std::int64_t divisor = s.count_include_pad ? padded : valid;
      y[i] = divisor ? sum / static_cast<float>(divisor) : 0.0f;
    }
  }
}

__device__ __forceinline__ float reduce_identity(ReduceOp op) {
  return op == ReduceOp::kMax ? -INFINITY : op == ReduceOp::kMin ? INFINITY : 0.0f;
}

__device__ __forceinline__ float reduce_step(ReduceOp op, float a, float v) {
  switch (op) {
    case ReduceOp::kMax: return v > a ? v : a;  // std::max(a, v): a NaN v is skipped
    case ReduceOp::kMin: return v < a ? v : a;
    default: return a + v;
  }
}

__device__ __forceinline__ float reduce_finish(ReduceOp op, float a, std::int64_t extent) {
  return op == ReduceOp::kMean ? a / static_cast<float>(extent) : a;
}

// inner == 1: one block per output row, the row's extent shared by the block's threads.
__global__ void reduce_rows_kernel(ReduceOp op, const float* __restrict__ x, float* __restrict__ y,
                                   std::int64_t extent) {
  __shared__ float partial[kThreads];
  const float* row = x + static_cast<std::int64_t>(blockIdx.x) * extent;
  float a = reduce_identity(op);
  for (std::int64_t r = threadIdx.x; r < extent; r += blockDim.x) a = reduce_step(op, a, row[r]);
  partial[threadIdx.x] = a;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (threadIdx.x < half)
      partial[threadIdx.x] = reduce_step(op, partial[threadIdx.x], partial[threadIdx.x + half]);
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = reduce_finish(op, partial[0], extent);
}

// inner > 1: one thread per output (o, i), reading x[o, :, i] (coalesced across i).
__global__ void reduce_columns_kernel(ReduceOp op, const float* __restrict__ x,
                                      float* __restrict__ y, std::int64_t outer,
                                      std::int64_t extent, std::int64_t inner) {
  const std::int64_t total = outer * inner;
  for (std::int64_t t = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; t < total;
       t += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t o = t / inner, i = t % inner;
    const float* column = x + o * extent * inner + i;
    float a = reduce_identity(op);
    for (std::int64_t r = 0; r < extent; ++r) a = reduce_step(op, a, column[r * inner]);
    y[t] = reduce_finish(op, a, extent);
  }
}

}  // namespace

cudaError_t pool2d(const Pool2d& shape, const float* x, float* y, cudaStream_t stream) {
  const std::int64_t total = shape.planes * shape.out_h * shape.out_w;
  if (total <= 0) return cudaSuccess;
  pool2d_kernel<<<blocks_for(total), kThreads, 0, stream>>>(shape, x, y);
  return cudaGetLastError();
}

cudaError_t reduce(ReduceOp op, const float* x, float* y, std::int64_t outer, std::int64_t extent,
                   std::int64_t inner, cudaStream_t stream) {
  if (outer * inner <= 0) return cudaSuccess;
  if (inner == 1 && outer <= 0x7fffffff) {
    reduce_rows_kernel<<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(op, x, y, extent);
  } else {
    reduce_columns_kernel<<<blocks_for(outer * inner), kThreads, 0, stream>>>(op, x, y, outer,
                                                                              extent, inner);
  }
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
