// The device steps around the IMMA GEMM of the CUDA INT8 dense layers (int8_gemm_ops.h): the
// activation's quantization into padded int8 rows and the dequantize + bias + activation
// epilogue. Both compute, element by element, what the host references of int8_gemm_host.h do
// (round to nearest even, the same float operations in the same order), so the gpu tests can ask
// for exact int8 and int32 values.
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/int8_gemm_ops.h"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

__global__ void quantize_int8_rows_kernel(const float* __restrict__ x, std::int64_t rows,
                                          std::int64_t depth, std::int64_t padded_depth,
                                          float inverse_scale, float zero_point,
                                          std::int8_t* __restrict__ out) {
  const std::int64_t total = rows * padded_depth;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = i / padded_depth;
    const std::int64_t k = i - m * padded_depth;
    std::int8_t q = 0;
    if (k < depth) {
      // As the CPU's quantize_activation: rint(x / scale) + zero point, clamped to 0..255
      // (fmaxf(NaN, 0) is 0), then shifted into the signed range.
      float v = rintf(__fmul_rn(x[m * depth + k], inverse_scale));
      v = fminf(fmaxf(__fadd_rn(v, zero_point), 0.0f), 255.0f);
      q = static_cast<std::int8_t>(static_cast<int>(v) - 128);
    }
    out[i] = q;
  }
}

__global__ void int8_epilogue_kernel(Int8Epilogue e, float* __restrict__ y) {
  const std::int64_t total = e.rows * e.columns;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = i / e.columns;
    const std::int64_t c = i - m * e.columns;
    const float centred = __int2float_rn(e.acc[m * e.ld_acc + c] - e.zero_point_sums[c]);
    const float v = fmaf(centred, e.scales[c], e.bias ? e.bias[c] : 0.0f);
    y[i] = apply_unary(e.op, v, e.alpha, e.beta);
  }
}

}  // namespace

cudaError_t quantize_int8_rows(const float* x, std::int64_t rows, std::int64_t depth,
                               std::int64_t padded_depth, float inverse_scale, float zero_point,
                               std::int8_t* out, cudaStream_t stream) {
  if (rows <= 0) return cudaSuccess;
  quantize_int8_rows_kernel<<<grid_stride_blocks(rows * padded_depth, kThreads), kThreads, 0,
                              stream>>>(x, rows, depth, padded_depth, inverse_scale, zero_point,
                                        out);
  return cudaGetLastError();
}

cudaError_t int8_epilogue(const Int8Epilogue& e, float* y, cudaStream_t stream) {
  if (e.rows <= 0 || e.columns <= 0) return cudaSuccess;
  int8_epilogue_kernel<<<grid_stride_blocks(e.rows * e.columns, kThreads), kThreads, 0, stream>>>(
      e, y);
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
