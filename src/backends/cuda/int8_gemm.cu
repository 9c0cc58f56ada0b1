// The device steps around the IMMA GEMM of the CUDA INT8 dense layers (int8_gemm_ops.h): the
// activation's quantization into padded int8 rows (or a convolution's input unfolded and
// quantized in the same pass) and the dequantize + bias + activation epilogue. They compute,
// element by element, what the host references of int8_gemm_host.h do (round to nearest even,
// the same float operations in the same order), so the gpu tests can ask for exact int8 and
// int32 values.
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/int8_gemm_ops.h"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

// As the CPU's quantize_activation: rint(x / scale) + zero point, clamped to 0..255 (fmaxf(NaN,
// 0) is 0), then shifted into the signed range.
__device__ __forceinline__ std::int8_t quantize_signed(float x, float inverse_scale,
                                                       float zero_point) {
  float v = rintf(__fmul_rn(x, inverse_scale));
  v = fminf(fmaxf(__fadd_rn(v, zero_point), 0.0f), 255.0f);
  return static_cast<std::int8_t>(static_cast<int>(v) - 128);
}

__global__ void quantize_int8_rows_kernel(const float* __restrict__ x, std::int64_t rows,
                                          std::int64_t depth, std::int64_t padded_depth,
                                          float inverse_scale, float zero_point,
                                          std::int8_t* __restrict__ out) {
  const std::int64_t total = rows * padded_depth;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = i / padded_depth;
    const std::int64_t k = i - m * padded_depth;
    out[i] = k < depth ? quantize_signed(x[m * depth + k], inverse_scale, zero_point) : 0;
  }
}

__global__ void quantize_int8_im2col_kernel(const float* __restrict__ x, Int8Im2col g,
                                            std::int8_t* __restrict__ out) {
  const std::int64_t total = g.batch * g.out_h * g.out_w * g.padded_depth;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t m = i / g.padded_depth;
    const std::int64_t k = i - m * g.padded_depth;
    std::int8_t q = 0;
    if (k < g.depth) {
      const std::int64_t ox = m % g.out_w, oy = m / g.out_w % g.out_h, n = m / (g.out_w * g.out_h);
      const std::int64_t kx = k % g.kernel_w, ky = k / g.kernel_w % g.kernel_h,
                         c = k / (g.kernel_w * g.kernel_h);
      const std::int64_t iy = oy * g.stride_h - g.pad_top + ky * g.dilation_h;
      const std::int64_t ix = ox * g.stride_w - g.pad_left + kx * g.dilation_w;
      q = iy >= 0 && iy < g.height && ix >= 0 && ix < g.width
              ? quantize_signed(x[((n * g.channels + c) * g.height + iy) * g.width + ix],
                                g.inverse_scale, g.zero_point)
              : g.pad_value;
    }
    out[i] = q;
  }
}

__global__ void int8_epilogue_kernel(Int8Epilogue e, float* __restrict__ y) {
  const std::int64_t total = e.rows * e.columns;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    // i indexes y: [rows][columns], or NCHW [n][columns][positions] for a convolution.
    std::int64_t m, c;
    if (e.positions > 0) {
      const std::int64_t p = i % e.positions;
      c = i / e.positions % e.columns;
      m = i / (e.positions * e.columns) * e.positions + p;
    } else {
      m = i / e.columns;
      c = i - m * e.columns;
    }
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

cudaError_t quantize_int8_im2col(const float* x, const Int8Im2col& g, std::int8_t* out,
                                 cudaStream_t stream) {
  const std::int64_t total = g.batch * g.out_h * g.out_w * g.padded_depth;
  if (total <= 0) return cudaSuccess;
  quantize_int8_im2col_kernel<<<grid_stride_blocks(total, kThreads), kThreads, 0, stream>>>(x, g,
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
