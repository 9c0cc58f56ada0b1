// The width-fold convolution's two passes around cuDNN (conv_width_fold.h): one thread per
// element, the index maps shared with the host reference, 32-bit arithmetic (the host checks
// width_fold_applies, so every tensor has fewer than 2^31 elements).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/operand_convert.cuh"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float load_float(const float* p, int i) {
  return p[i];
}
__device__ __forceinline__ float load_float(const __half* p, int i) {
  return __half2float(p[i]);
}
__device__ __forceinline__ float load_float(const __nv_bfloat16* p, int i) {
  return __bfloat162float(p[i]);
}

// Consecutive threads write consecutive folded channels of one row (coalesced); their reads run
// along iw within a window, then jump a channel plane.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    width_fold_input_kernel(WidthFold f, const float* __restrict__ x, T* __restrict__ folded_x,
                            unsigned n) {
  // Unsigned: n < 2^31, and the last stride past it must not wrap.
  for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x)
    folded_x[e] = from_float<T>(width_fold_input_value(f, x, static_cast<int>(e)));
}

// A of the GEMM tactics, one 16-byte chunk (chunk_elements elements) per thread and step: both
// sides are contiguous runs of chunks.
__global__ void __launch_bounds__(kThreads)
    width_fold_rows_kernel(WidthFold f, const uint4* __restrict__ folded_x, uint4* __restrict__ a,
                           int chunk_elements, unsigned n) {
  for (unsigned q = blockIdx.x * blockDim.x + threadIdx.x; q < n; q += gridDim.x * blockDim.x) {
    const int source = width_fold_row_chunk_source(f, static_cast<int>(q), chunk_elements);
    a[q] = source < 0 ? make_uint4(0u, 0u, 0u, 0u) : folded_x[source];
  }
}

// Consecutive threads write consecutive ow of y (coalesced); their reads are runs of tile_w.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    width_fold_output_kernel(WidthFold f, const T* __restrict__ folded_y,
                             const float* __restrict__ bias, UnaryOp op, float alpha, float beta,
                             float* __restrict__ y, unsigned n) {
  for (unsigned e = blockIdx.x * blockDim.x + threadIdx.x; e < n; e += gridDim.x * blockDim.x) {
    const float v = load_float(folded_y, width_fold_output_source(f, static_cast<int>(e)));
    const float b = bias ? bias[f.by_out_channels.mod(f.by_plane.div(static_cast<int>(e)))] : 0.0f;
    y[e] = apply_unary(op, v + b, alpha, beta);
  }
}

}  // namespace

cudaError_t width_fold_input(const WidthFold& fold, const float* x, void* folded_x, LowType type,
                             cudaStream_t stream) {
  const std::int64_t n = fold.folded_input_elements();
  if (n <= 0) return cudaSuccess;
  const unsigned blocks = grid_stride_blocks(n, kThreads);
  switch (type) {
    case LowType::kF16:
      width_fold_input_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, x, static_cast<__half*>(folded_x), static_cast<unsigned>(n));
      return cudaGetLastError();
    case LowType::kBF16:
      width_fold_input_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, x, static_cast<__nv_bfloat16*>(folded_x), static_cast<unsigned>(n));
      return cudaGetLastError();
    case LowType::kF32:
      width_fold_input_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, x, static_cast<float*>(folded_x), static_cast<unsigned>(n));
      return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

cudaError_t width_fold_rows(const WidthFold& fold, const void* folded_x, void* a, LowType type,
                            cudaStream_t stream) {
  const int chunk_elements = type == LowType::kF32 ? 4 : 8;
  const std::int64_t n = fold.unfolded_rows() * fold.unfolded_columns() / chunk_elements;
  if (n <= 0) return cudaSuccess;
  width_fold_rows_kernel<<<grid_stride_blocks(n, kThreads), kThreads, 0, stream>>>(
      fold, static_cast<const uint4*>(folded_x), static_cast<uint4*>(a), chunk_elements,
      static_cast<unsigned>(n));
  return cudaGetLastError();
}

cudaError_t width_fold_output(const WidthFold& fold, const void* folded_y, LowType type,
                              const float* bias, UnaryOp op, float alpha, float beta, float* y,
                              cudaStream_t stream) {
  const std::int64_t n = fold.output_elements();
  if (n <= 0) return cudaSuccess;
  const unsigned blocks = grid_stride_blocks(n, kThreads);
  switch (type) {
    case LowType::kF16:
      width_fold_output_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, static_cast<const __half*>(folded_y), bias, op, alpha, beta, y,
          static_cast<unsigned>(n));
      return cudaGetLastError();
    case LowType::kBF16:
      width_fold_output_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, static_cast<const __nv_bfloat16*>(folded_y), bias, op, alpha, beta, y,
          static_cast<unsigned>(n));
      return cudaGetLastError();
    case LowType::kF32:
      width_fold_output_kernel<<<blocks, kThreads, 0, stream>>>(
          fold, static_cast<const float*>(folded_y), bias, op, alpha, beta, y,
          static_cast<unsigned>(n));
      return cudaGetLastError();
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
