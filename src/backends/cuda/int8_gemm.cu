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

// Each thread writes 4 consecutive int8 of a row as one 32-bit store (padded_depth is a multiple
// of 16); Index is int32 when every index fits, which keeps the divisions cheap.
__device__ __forceinline__ void store4(std::int8_t* out, const std::int8_t (&q)[4]) {
  char4 v;
  v.x = q[0];
  v.y = q[1];
  v.z = q[2];
  v.w = q[3];
  *reinterpret_cast<char4*>(out) = v;
}

template <typename Index>
__global__ void quantize_int8_rows_kernel(const float* __restrict__ x, Index rows, Index depth,
                                          Index padded_depth, float inverse_scale, float zero_point,
                                          std::int8_t* __restrict__ out) {
  const Index quads = rows * (padded_depth / 4);
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index m = i / (padded_depth / 4);
    const Index k0 = (i - m * (padded_depth / 4)) * 4;
    std::int8_t q[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const Index k = k0 + j;
      q[j] = k < depth ? quantize_signed(x[m * depth + k], inverse_scale, zero_point) : 0;
    }
    store4(out + m * padded_depth + k0, q);
  }
}

template <typename Index>
__global__ void quantize_int8_im2col_kernel(const float* __restrict__ x, Int8Im2col g,
                                            std::int8_t* __restrict__ out) {
  const Index padded_depth = static_cast<Index>(g.padded_depth),
              depth = static_cast<Index>(g.depth);
  const Index out_w = static_cast<Index>(g.out_w), out_h = static_cast<Index>(g.out_h);
  const Index kernel_w = static_cast<Index>(g.kernel_w), kernel_h = static_cast<Index>(g.kernel_h);
  const Index width = static_cast<Index>(g.width), height = static_cast<Index>(g.height);
  const Index channels = static_cast<Index>(g.channels);
  const Index quads = static_cast<Index>(g.batch) * out_h * out_w * (padded_depth / 4);
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < quads;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const Index m = i / (padded_depth / 4);
    const Index k0 = (i - m * (padded_depth / 4)) * 4;
    const Index ox = m % out_w, oy = m / out_w % out_h, n = m / (out_w * out_h);
    std::int8_t q[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const Index k = k0 + j;
      q[j] = 0;
      if (k < depth) {
        const Index kx = k % kernel_w, ky = k / kernel_w % kernel_h, c = k / (kernel_w * kernel_h);
        const Index iy = oy * static_cast<Index>(g.stride_h) - static_cast<Index>(g.pad_top) +
                         ky * static_cast<Index>(g.dilation_h);
        const Index ix = ox * static_cast<Index>(g.stride_w) - static_cast<Index>(g.pad_left) +
                         kx * static_cast<Index>(g.dilation_w);
        q[j] = iy >= 0 && iy < height && ix >= 0 && ix < width
                   ? quantize_signed(x[((n * channels + c) * height + iy) * width + ix],
                                     g.inverse_scale, g.zero_point)
                   : g.pad_value;
      }
    }
    store4(out + m * padded_depth + k0, q);
  }
}

// Whether every index of a grid over `elements` (and of the arrays it addresses) fits in int32.
bool fits_int32(std::int64_t elements) {
  return elements < (std::int64_t{1} << 31) - (std::int64_t{1} << 20);
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
  const std::int64_t quads = rows * (padded_depth / 4);
  const unsigned blocks = grid_stride_blocks(quads, kThreads);
  if (fits_int32(rows * padded_depth)) {
    quantize_int8_rows_kernel<int><<<blocks, kThreads, 0, stream>>>(
        x, static_cast<int>(rows), static_cast<int>(depth), static_cast<int>(padded_depth),
        inverse_scale, zero_point, out);
  } else {
    quantize_int8_rows_kernel<std::int64_t><<<blocks, kThreads, 0, stream>>>(
        x, rows, depth, padded_depth, inverse_scale, zero_point, out);
  }
  return cudaGetLastError();
}

cudaError_t quantize_int8_im2col(const float* x, const Int8Im2col& g, std::int8_t* out,
                                 cudaStream_t stream) {
  const std::int64_t total = g.batch * g.out_h * g.out_w * g.padded_depth;
  if (total <= 0) return cudaSuccess;
  const unsigned blocks = grid_stride_blocks(total / 4, kThreads);
  const std::int64_t input = g.batch * g.channels * g.height * g.width;
  if (fits_int32(total) && fits_int32(input)) {
    quantize_int8_im2col_kernel<int><<<blocks, kThreads, 0, stream>>>(x, g, out);
  } else {
    quantize_int8_im2col_kernel<std::int64_t><<<blocks, kThreads, 0, stream>>>(x, g, out);
  }
  return cudaGetLastError();
}

cudaError_t int8_epilogue(const Int8Epilogue& e, float* y, cudaStream_t stream) {
  if (e.rows <= 0 || e.columns <= 0) return cudaSuccess;
  int8_epilogue_kernel<<<grid_stride_blocks(e.rows * e.columns, kThreads), kThreads, 0, stream>>>(
      e, y);
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
