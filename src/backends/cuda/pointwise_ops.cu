// Elementwise, data-movement, normalization and conversion kernels of the CUDA backend.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <algorithm>
#include <type_traits>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/grid_stride.cuh"
#include "backends/cuda/operand_convert.cuh"
#include "backends/cuda/unary_apply.cuh"
#include "backends/cuda/warp_reduce.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t n) {
  return grid_stride_blocks(n, kThreads);
}

__global__ void unary_kernel(UnaryOp op, float alpha, float beta, const float* x, float* y,
                             std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    y[i] = apply_unary(op, x[i], alpha, beta);
  }
}

__device__ __forceinline__ float apply_binary(BinaryOp op, float a, float b) {
  switch (op) {
    case BinaryOp::kAdd: return a + b;
    case BinaryOp::kSub: return a - b;
    case BinaryOp::kMul: return a * b;
    case BinaryOp::kDiv: return a / b;
    case BinaryOp::kPow: return powf(a, b);
    case BinaryOp::kMax: return fmaxf(a, b);
    case BinaryOp::kMin: return fminf(a, b);
  }
  return a;
}

__global__ void binary_kernel(BinaryOp op, const float* a, const float* b, float* y, std::int64_t n,
                              BroadcastIndex index) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    std::int64_t rest = i, oa = 0, ob = 0;
    for (int d = index.rank - 1; d >= 0; --d) {
      const std::int64_t coord = rest % index.dims[d];
      rest /= index.dims[d];
      oa += coord * index.stride_a[d];
      ob += coord * index.stride_b[d];
    }
    y[i] = apply_binary(op, a[oa], b[ob]);
  }
}

// blockIdx.y: the span; 16-byte words when both ends are aligned, bytes otherwise.
__global__ void copy_spans_kernel(CopySpans spans) {
  const int span = static_cast<int>(blockIdx.y);
  const auto* src = static_cast<const unsigned char*>(spans.src[span]);
  auto* dst = static_cast<unsigned char*>(spans.dst[span]);
  const std::int64_t n = spans.bytes[span];
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  const std::int64_t first = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::int64_t words = 0;
  if (((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) & 15) == 0) {
    words = n / 16;
    for (std::int64_t w = first; w < words; w += stride)
      reinterpret_cast<uint4*>(dst)[w] = reinterpret_cast<const uint4*>(src)[w];
  }
  for (std::int64_t b = words * 16 + first; b < n; b += stride) dst[b] = src[b];
}

// Index: std::int64_t, or std::uint32_t when every index of the copy fits (the launcher
// checks), because 64-bit division is a long emulated sequence and each axis costs one.
template <typename T, typename Index>
__global__ void strided_copy_kernel(const T* in, T* out, Index n, StridedCopy copy) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    Index rest = i, oi = static_cast<Index>(copy.in_offset),
          oo = static_cast<Index>(copy.out_offset);
    for (int d = copy.rank - 1; d >= 0; --d) {
      const Index dim = static_cast<Index>(copy.dims[d]);
      const Index coord = rest % dim;
      rest /= dim;
      oi += coord * static_cast<Index>(copy.in_strides[d]);
      oo += coord * static_cast<Index>(copy.out_strides[d]);
    }
    out[oo] = in[oi];
  }
}

// out[c * rows + r] = in[r * cols + c] through a shared-memory tile: both the read and the
// write of a warp are contiguous (the strided kernel would gather one side).
constexpr int kCopyTile = 32;
constexpr int kCopyTileRows = 8;
template <typename T>
__global__ void transpose_2d_kernel(const T* in, T* out, std::uint32_t rows, std::uint32_t cols,
                                    std::int64_t in_offset, std::int64_t out_offset) {
  __shared__ T tile[kCopyTile][kCopyTile + 1];
  const std::uint32_t r0 = blockIdx.y * kCopyTile, c0 = blockIdx.x * kCopyTile;
  in += in_offset;
  out += out_offset;
  for (std::uint32_t j = threadIdx.y; j < kCopyTile; j += kCopyTileRows) {
    const std::uint32_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = in[static_cast<std::size_t>(r) * cols + c];
  }
  __syncthreads();
  for (std::uint32_t j = threadIdx.y; j < kCopyTile; j += kCopyTileRows) {
    const std::uint32_t c = c0 + j, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[static_cast<std::size_t>(c) * rows + r] = tile[threadIdx.x][j];
  }
}

template <typename T>
__global__ void gather_kernel(const T* in, const std::int64_t* indices, T* out, std::int64_t outer,
                              std::int64_t axis_size, std::int64_t index_count,
                              std::int64_t inner) {
  const std::int64_t n = outer * index_count * inner;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t k = i % inner;
    const std::int64_t j = (i / inner) % index_count;
    const std::int64_t o = i / (inner * index_count);
    std::int64_t idx = indices[j];
    if (idx < 0) idx += axis_size;
    // An index out of range reads 0 (the CPU backend reports it; a graph cannot stop).
    out[i] = idx >= 0 && idx < axis_size ? in[(o * axis_size + idx) * inner + k] : T{};
  }
}

// The pool's rows and the batch tensor's rows are whole runs of `row_words` words of W (16, 4 or
// 1 bytes): each thread moves one word.
template <bool kGather, typename W>
__global__ void slot_kernel(const W* src, const int* slots, W* dst, std::int64_t batch,
                            std::int64_t outer, std::int64_t row_words) {
  const std::int64_t n = outer * batch * row_words;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t k = i % row_words;
    const std::int64_t b = (i / row_words) % batch;
    const std::int64_t o = i / (row_words * batch);
    const std::int64_t pooled = (static_cast<std::int64_t>(slots[b]) * outer + o) * row_words + k;
    if (kGather) {
      dst[i] = src[pooled];
    } else {
      dst[pooled] = src[i];
    }
  }
}

template <bool kGather>
cudaError_t slot_copy(const void* src, const int* slots, void* dst, std::int64_t batch,
                      std::int64_t outer, std::int64_t row_bytes, cudaStream_t stream) {
  if (outer * batch * row_bytes <= 0) return cudaSuccess;
  const auto aligned = [&](std::uintptr_t a) {
    return ((reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst)) % a ==
            0) &&
           row_bytes % static_cast<std::int64_t>(a) == 0;
  };
  if (aligned(16)) {
    const std::int64_t words = row_bytes / 16;
    slot_kernel<kGather><<<grid_for(outer * batch * words), kThreads, 0, stream>>>(
        static_cast<const uint4*>(src), slots, static_cast<uint4*>(dst), batch, outer, words);
  } else if (aligned(4)) {
    const std::int64_t words = row_bytes / 4;
    slot_kernel<kGather><<<grid_for(outer * batch * words), kThreads, 0, stream>>>(
        static_cast<const unsigned*>(src), slots, static_cast<unsigned*>(dst), batch, outer, words);
  } else {
    slot_kernel<kGather><<<grid_for(outer * batch * row_bytes), kThreads, 0, stream>>>(
        static_cast<const unsigned char*>(src), slots, static_cast<unsigned char*>(dst), batch,
        outer, row_bytes);
  }
  return cudaGetLastError();
}

// Block-wide reduction through shared memory; every thread gets the result.
template <bool kMax>
__device__ float block_reduce(float v, float* shared) {
  v = kMax ? warp_max(v) : warp_sum(v);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = threadIdx.x < warps ? shared[threadIdx.x] : (kMax ? -INFINITY : 0.0f);
  if (warp == 0) v = kMax ? warp_max(v) : warp_sum(v);
  if (threadIdx.x == 0) shared[0] = v;
  __syncthreads();
  return shared[0];
}

// One block per row (inner == 1).
__global__ void softmax_rows_kernel(const float* x, float* y, std::int64_t axis, bool log) {
  __shared__ float shared[32];
  const float* row = x + blockIdx.x * axis;
  float* out = y + blockIdx.x * axis;
  float m = -INFINITY;
  for (std::int64_t i = threadIdx.x; i < axis; i += blockDim.x) m = fmaxf(m, row[i]);
  m = block_reduce<true>(m, shared);
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < axis; i += blockDim.x) s += expf(row[i] - m);
  s = block_reduce<false>(s, shared);
  const float log_s = logf(s);
  for (std::int64_t i = threadIdx.x; i < axis; i += blockDim.x) {
    out[i] = log ? row[i] - m - log_s : expf(row[i] - m) / s;
  }
}

// One thread per (outer, inner) position, walking the axis (inner > 1).
__global__ void softmax_strided_kernel(const float* x, float* y, std::int64_t outer,
                                       std::int64_t axis, std::int64_t inner, bool log) {
  const std::int64_t n = outer * inner;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t base = (i / inner) * axis * inner + i % inner;
    float m = -INFINITY;
    for (std::int64_t a = 0; a < axis; ++a) m = fmaxf(m, x[base + a * inner]);
    float s = 0.0f;
    for (std::int64_t a = 0; a < axis; ++a) s += expf(x[base + a * inner] - m);
    const float log_s = logf(s);
    for (std::int64_t a = 0; a < axis; ++a) {
      const float v = x[base + a * inner];
      y[base + a * inner] = log ? v - m - log_s : expf(v - m) / s;
    }
  }
}

__global__ void layer_norm_kernel(const float* x, const float* scale, const float* bias, float* y,
                                  std::int64_t cols, float epsilon) {
  __shared__ float shared[32];
  const float* row = x + blockIdx.x * cols;
  float* out = y + blockIdx.x * cols;
  float s = 0.0f;
  for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += row[i];
  const float mean = block_reduce<false>(s, shared) / static_cast<float>(cols);
  float v = 0.0f;
  for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    const float d = row[i] - mean;
    v += d * d;
  }
  const float var = block_reduce<false>(v, shared) / static_cast<float>(cols);
  const float inv = rsqrtf(var + epsilon);
  for (std::int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    out[i] = (row[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0f);
  }
}

template <typename T>
__global__ void convert_kernel(const float* in, T* out, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = from_float<T>(in[i]);
  }
}

__global__ void split_tf32_kernel(const float* in, float* hi, float* lo, std::int64_t n) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float v = in[i];
    unsigned rounded = 0;
    asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(rounded) : "f"(v));
    // Rounding up past FLT_MAX gives infinity: truncate such values instead (as the host does).
    if (isinf(__uint_as_float(rounded)) && !isinf(v)) rounded = __float_as_uint(v) & 0xffffe000u;
    const float h = __uint_as_float(rounded);
    hi[i] = h;
    lo[i] = v - h;
  }
}

__device__ __forceinline__ float to_float(float v) {
  return v;
}
__device__ __forceinline__ float to_float(__half v) {
  return __half2float(v);
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

// Index as in strided_copy_kernel: 32-bit when n fits (the channel of each element costs a
// division and a remainder).
template <typename T, typename Index>
__global__ void bias_activation_kernel(const T* y, const float* bias, Index channels,
                                       Index positions, Index n, UnaryOp op, float alpha,
                                       float beta, float* out) {
  for (Index i = blockIdx.x * static_cast<Index>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<Index>(gridDim.x) * blockDim.x) {
    const float v = to_float(y[i]) + (bias ? bias[(i / positions) % channels] : 0.0f);
    out[i] = apply_unary(op, v, alpha, beta);
  }
}

// NCHW <-> NHWC: each image's [rows, cols] matrix transposed to [cols, rows] through a 32 x 32
// tile in shared memory, so that both the read and the write of a warp are contiguous (a plain
// per-element kernel would make one of them a stride-C gather). `finish(v, out_row)` turns a
// value into the output element (the conversion, or the bias and activation of a channel).
constexpr int kTile = 32;
constexpr int kTileRows = 8;  // threads per tile column; each thread moves kTile / kTileRows

template <typename Src, typename Dst, typename Finish>
__global__ void transpose_tiles_kernel(const Src* in, Dst* out, std::int64_t rows,
                                       std::int64_t cols, Finish finish) {
  __shared__ float tile[kTile][kTile + 1];  // +1: no bank conflicts on the transposed read
  const std::int64_t image = static_cast<std::int64_t>(blockIdx.z) * rows * cols;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * kTile;
  const std::int64_t c0 = static_cast<std::int64_t>(blockIdx.x) * kTile;
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const std::int64_t r = r0 + j, c = c0 + threadIdx.x;
    if (r < rows && c < cols) tile[j][threadIdx.x] = to_float(in[image + r * cols + c]);
  }
  __syncthreads();
  for (int j = threadIdx.y; j < kTile; j += kTileRows) {
    const std::int64_t c = c0 + j, r = r0 + threadIdx.x;
    if (r < rows && c < cols) out[image + c * rows + r] = finish(tile[threadIdx.x][j], c);
  }
}

template <typename T>
struct ToType {
  __device__ T operator()(float v, std::int64_t) const { return from_float<T>(v); }
};

struct BiasActivation {
  const float* bias;
  UnaryOp op;
  float alpha, beta;
  __device__ float operator()(float v, std::int64_t channel) const {
    return apply_unary(op, v + (bias ? bias[channel] : 0.0f), alpha, beta);
  }
};

template <typename Src, typename Dst, typename Finish>
cudaError_t transpose_tiles(const Src* in, Dst* out, std::int64_t batch, std::int64_t rows,
                            std::int64_t cols, Finish finish, cudaStream_t stream) {
  if (batch * rows * cols <= 0) return cudaSuccess;
  if (batch > 65535) return cudaErrorInvalidValue;  // grid z
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                  static_cast<unsigned>((rows + kTile - 1) / kTile), static_cast<unsigned>(batch));
  transpose_tiles_kernel<<<grid, dim3(kTile, kTileRows), 0, stream>>>(in, out, rows, cols, finish);
  return cudaGetLastError();
}

template <typename T>
__global__ void im2col_kernel(Im2Col s, const float* x, T* col) {
  const std::int64_t positions = s.out_h * s.out_w;
  const std::int64_t patch_rows = s.channels * s.kernel_h * s.kernel_w;
  const std::int64_t n = s.batch * s.k_rows * positions;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t p = i % positions;
    const std::int64_t b = (i / positions) % s.batch;
    const std::int64_t row = i / (positions * s.batch);
    float v = 0.0f;
    if (row < patch_rows) {
      const std::int64_t kw = row % s.kernel_w;
      const std::int64_t kh = (row / s.kernel_w) % s.kernel_h;
      const std::int64_t c = row / (s.kernel_w * s.kernel_h);
      const std::int64_t oh = p / s.out_w, ow = p % s.out_w;
      const std::int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dilation_h;
      const std::int64_t iw = ow * s.stride_w - s.pad_left + kw * s.dilation_w;
      if (ih >= 0 && ih < s.height && iw >= 0 && iw < s.width)
        v = x[((b * s.channels + c) * s.height + ih) * s.width + iw];
    } else if (row == patch_rows && s.ones_row) {
      v = 1.0f;
    }
    col[row * s.row_stride + b * positions + p] = from_float<T>(v);
  }
}

// The fast form: each block owns a tile of col rows x columns sized to about kIm2ColTile
// elements, so a short image (a batch-1 streaming chunk has 328 columns against 7,392 rows) does
// not become one tiny block per row (14,784 blocks of 328 elements took 30 us on an H200). A
// thread splits each of its columns into image, oh and ow once, then walks the block's rows with
// the patch offsets (c, kh, kw) stepped incrementally: no division in the inner loop, 32-bit
// arithmetic. Consecutive threads write consecutive columns of a row and read consecutive iw:
// both sides coalesce. The general kernel above does six 64-bit divisions per element instead,
// which made it compute-bound (7 ms for the 1.2 GB col matrix of DS2's conv2 at batch 256).
constexpr int kIm2ColTile = 8192;

struct Im2ColTiling {
  int cols_per_block = 0, rows_per_block = 0;
  dim3 grid;
};

Im2ColTiling im2col_tiling(std::int64_t columns, std::int64_t k_rows) {
  Im2ColTiling t;
  if (columns >= kIm2ColTile) {
    t.cols_per_block = kIm2ColTile;
    t.rows_per_block = 1;
  } else {
    t.cols_per_block = static_cast<int>(columns);
    // Enough rows per block to fill it, but still about one wave of blocks (132 SMs x 8 blocks
    // of 256 threads on an H200) so that every SM has loads in flight.
    constexpr std::int64_t kWaveBlocks = 1056;
    t.rows_per_block = static_cast<int>(
        std::clamp<std::int64_t>(std::min(kIm2ColTile / columns, k_rows / kWaveBlocks), 1, 64));
  }
  t.grid = dim3(static_cast<unsigned>((columns + t.cols_per_block - 1) / t.cols_per_block),
                static_cast<unsigned>((k_rows + t.rows_per_block - 1) / t.rows_per_block));
  return t;
}

template <typename T>
__global__ void im2col_rows_kernel(Im2Col s, const float* x, T* col, int columns, int patch_rows,
                                   int cols_per_block, int rows_per_block) {
  const int row_begin = static_cast<int>(blockIdx.y) * rows_per_block;
  const int row_end = min(static_cast<int>(s.k_rows), row_begin + rows_per_block);
  const int col_begin = static_cast<int>(blockIdx.x) * cols_per_block;
  const int col_end = min(columns, col_begin + cols_per_block);
  const int kernel_w = static_cast<int>(s.kernel_w), kernel_h = static_cast<int>(s.kernel_h);
  const int out_w = static_cast<int>(s.out_w);
  const int positions = static_cast<int>(s.out_h) * out_w;
  const int height = static_cast<int>(s.height), width = static_cast<int>(s.width);
  const int plane = height * width;
  const int dilation_h = static_cast<int>(s.dilation_h),
            dilation_w = static_cast<int>(s.dilation_w);
  const std::int64_t image_stride = s.channels * s.height * s.width;
  // The first row's patch offsets, once per thread.
  const int kw0 = row_begin % kernel_w;
  const int kh0 = (row_begin / kernel_w) % kernel_h;
  const int c0 = row_begin / (kernel_w * kernel_h);
  for (int i = col_begin + static_cast<int>(threadIdx.x); i < col_end;
       i += static_cast<int>(blockDim.x)) {
    const int b = i / positions;
    const int p = i - b * positions;
    const int oh = p / out_w;
    const int ow = p - oh * out_w;
    const int ih_base = oh * static_cast<int>(s.stride_h) - static_cast<int>(s.pad_top);
    const int iw_base = ow * static_cast<int>(s.stride_w) - static_cast<int>(s.pad_left);
    const float* image = x + b * image_stride;
    int kw = kw0, kh = kh0, c = c0;
    for (int row = row_begin; row < row_end; ++row) {
      float v = 0.0f;
      if (row < patch_rows) {
        const int ih = ih_base + kh * dilation_h;
        const int iw = iw_base + kw * dilation_w;
        if (ih >= 0 && ih < height && iw >= 0 && iw < width) v = image[c * plane + ih * width + iw];
      } else if (row == patch_rows && s.ones_row) {
        v = 1.0f;
      }
      col[static_cast<std::int64_t>(row) * s.row_stride + i] = from_float<T>(v);
      if (++kw == kernel_w) {
        kw = 0;
        if (++kh == kernel_h) {
          kh = 0;
          ++c;
        }
      }
    }
  }
}

// One thread per output element; the oracle, not a fast path.
__global__ void naive_gemm_kernel(NaiveGemm g, const float* a, const float* b, const float* bias,
                                  float* d) {
  const std::int64_t n_total = g.batch * g.m * g.n;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < n_total; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t col = i % g.n;
    const std::int64_t row = (i / g.n) % g.m;
    const std::int64_t batch = i / (g.n * g.m);
    const float* ab = a + batch * g.stride_a;
    const float* bb = b + batch * g.stride_b;
    float acc = 0.0f;
    for (std::int64_t k = 0; k < g.k; ++k) {
      const float av = g.trans_a ? ab[k * g.m + row] : ab[row * g.k + k];
      const float bv = g.trans_b ? bb[col * g.k + k] : bb[k * g.n + col];
      acc += av * bv;
    }
    d[batch * g.stride_d + row * g.n + col] = acc + (bias ? bias[col] : 0.0f);
  }
}

}  // namespace

cudaError_t unary(UnaryOp op, float alpha, float beta, const float* x, float* y, std::int64_t n,
                  cudaStream_t stream) {
  if (n > 0) unary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, alpha, beta, x, y, n);
  return cudaGetLastError();
}

cudaError_t binary(BinaryOp op, const float* a, const float* b, float* y, std::int64_t n,
                   const BroadcastIndex& index, cudaStream_t stream) {
  if (n > 0) binary_kernel<<<grid_for(n), kThreads, 0, stream>>>(op, a, b, y, n, index);
  return cudaGetLastError();
}

namespace {

// Whether every element index the copy touches (offsets included) fits in 32 bits.
bool fits_32_bits(const StridedCopy& copy, std::int64_t n) {
  constexpr std::int64_t kLimit = std::int64_t{1} << 31;
  std::int64_t in_end = copy.in_offset, out_end = copy.out_offset;
  for (int d = 0; d < copy.rank; ++d) {
    if (copy.in_strides[d] < 0 || copy.out_strides[d] < 0) return false;
    in_end += (copy.dims[d] - 1) * copy.in_strides[d];
    out_end += (copy.dims[d] - 1) * copy.out_strides[d];
  }
  return n < kLimit && in_end < kLimit && out_end < kLimit && copy.in_offset >= 0 &&
         copy.out_offset >= 0;
}

// A merged copy that is a plain 2-D transpose: out [R, C] contiguous, read from in [C, R]
// contiguous.
bool is_transpose_2d(const StridedCopy& c) {
  return c.rank == 2 && c.out_strides[1] == 1 && c.out_strides[0] == c.dims[1] &&
         c.in_strides[0] == 1 && c.in_strides[1] == c.dims[0];
}

template <typename T>
cudaError_t strided_copy_typed(const T* in, T* out, const StridedCopy& copy, std::int64_t n,
                               cudaStream_t stream) {
  if (is_transpose_2d(copy) && fits_32_bits(copy, n)) {
    // in is [dims[1] rows, dims[0] cols]; out is its transpose.
    const auto rows = static_cast<std::uint32_t>(copy.dims[1]);
    const auto cols = static_cast<std::uint32_t>(copy.dims[0]);
    const dim3 grid((cols + kCopyTile - 1) / kCopyTile, (rows + kCopyTile - 1) / kCopyTile);
    if (grid.y <= 65535) {
      transpose_2d_kernel<<<grid, dim3(kCopyTile, kCopyTileRows), 0, stream>>>(
          in, out, rows, cols, copy.in_offset, copy.out_offset);
      return cudaGetLastError();
    }
  }
  const unsigned grid = grid_for(n);
  if (fits_32_bits(copy, n)) {
    strided_copy_kernel<<<grid, kThreads, 0, stream>>>(in, out, static_cast<std::uint32_t>(n),
                                                       copy);
  } else {
    strided_copy_kernel<<<grid, kThreads, 0, stream>>>(in, out, n, copy);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t strided_copy(const void* in, void* out, int element_bytes, const StridedCopy& copy,
                         cudaStream_t stream) {
  const StridedCopy merged = merged_axes(copy);
  std::int64_t n = 1;
  for (int d = 0; d < merged.rank; ++d) n *= merged.dims[d];
  if (n <= 0) return cudaSuccess;
  switch (element_bytes) {
    case 1:
      return strided_copy_typed(static_cast<const std::uint8_t*>(in),
                                static_cast<std::uint8_t*>(out), merged, n, stream);
    case 2:
      return strided_copy_typed(static_cast<const std::uint16_t*>(in),
                                static_cast<std::uint16_t*>(out), merged, n, stream);
    case 4:
      return strided_copy_typed(static_cast<const std::uint32_t*>(in),
                                static_cast<std::uint32_t*>(out), merged, n, stream);
    case 8:
      return strided_copy_typed(static_cast<const std::uint64_t*>(in),
                                static_cast<std::uint64_t*>(out), merged, n, stream);
    default: break;
  }
  return cudaErrorInvalidValue;
}

cudaError_t copy_spans(const CopySpans& spans, cudaStream_t stream) {
  if (spans.count <= 0) return cudaSuccess;
  if (spans.count > kMaxCopySpans) return cudaErrorInvalidValue;
  std::int64_t largest = 0;
  for (int i = 0; i < spans.count; ++i) largest = std::max(largest, spans.bytes[i]);
  const std::int64_t words = (largest + 15) / 16;
  const auto blocks =
      static_cast<unsigned>(std::clamp<std::int64_t>((words + kThreads - 1) / kThreads, 1, 64));
  copy_spans_kernel<<<dim3(blocks, static_cast<unsigned>(spans.count)), kThreads, 0, stream>>>(
      spans);
  return cudaGetLastError();
}

cudaError_t gather(const void* in, const std::int64_t* indices, void* out, int element_bytes,
                   std::int64_t outer, std::int64_t axis_size, std::int64_t index_count,
                   std::int64_t inner, cudaStream_t stream) {
  const std::int64_t n = outer * index_count * inner;
  if (n <= 0) return cudaSuccess;
  const unsigned grid = grid_for(n);
  switch (element_bytes) {
    case 4:
      gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::uint32_t*>(in), indices,
                                                   static_cast<std::uint32_t*>(out), outer,
                                                   axis_size, index_count, inner);
      break;
    case 8:
      gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::uint64_t*>(in), indices,
                                                   static_cast<std::uint64_t*>(out), outer,
                                                   axis_size, index_count, inner);
      break;
    case 2:
      gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::uint16_t*>(in), indices,
                                                   static_cast<std::uint16_t*>(out), outer,
                                                   axis_size, index_count, inner);
      break;
    case 1:
      gather_kernel<<<grid, kThreads, 0, stream>>>(static_cast<const std::uint8_t*>(in), indices,
                                                   static_cast<std::uint8_t*>(out), outer,
                                                   axis_size, index_count, inner);
      break;
    default: return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t slot_gather(const void* pool, const int* slots, void* batch_tensor, std::int64_t batch,
                        std::int64_t outer, std::int64_t row_bytes, cudaStream_t stream) {
  return slot_copy<true>(pool, slots, batch_tensor, batch, outer, row_bytes, stream);
}

cudaError_t slot_scatter(const void* batch_tensor, const int* slots, void* pool, std::int64_t batch,
                         std::int64_t outer, std::int64_t row_bytes, cudaStream_t stream) {
  return slot_copy<false>(batch_tensor, slots, pool, batch, outer, row_bytes, stream);
}

cudaError_t softmax(const float* x, float* y, std::int64_t outer, std::int64_t axis,
                    std::int64_t inner, bool log, cudaStream_t stream) {
  if (outer * axis * inner <= 0) return cudaSuccess;
  if (inner == 1) {
    const int threads = axis >= 1024 ? 512 : axis >= 256 ? 256 : 64;
    softmax_rows_kernel<<<static_cast<unsigned>(outer), threads, 0, stream>>>(x, y, axis, log);
  } else {
    softmax_strided_kernel<<<grid_for(outer * inner), kThreads, 0, stream>>>(x, y, outer, axis,
                                                                             inner, log);
  }
  return cudaGetLastError();
}

cudaError_t layer_norm(const float* x, const float* scale, const float* bias, float* y,
                       std::int64_t rows, std::int64_t cols, float epsilon, cudaStream_t stream) {
  if (rows * cols <= 0) return cudaSuccess;
  const int threads = cols >= 1024 ? 512 : cols >= 256 ? 256 : 64;
  layer_norm_kernel<<<static_cast<unsigned>(rows), threads, 0, stream>>>(x, scale, bias, y, cols,
                                                                         epsilon);
  return cudaGetLastError();
}

cudaError_t convert_from_f32(const float* in, void* out, LowType type, std::int64_t n,
                             cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  switch (type) {
    case LowType::kF32:
      return cudaMemcpyAsync(out, in, static_cast<std::size_t>(n) * 4, cudaMemcpyDeviceToDevice,
                             stream);
    case LowType::kF16:
      convert_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, static_cast<__half*>(out), n);
      break;
    case LowType::kBF16:
      convert_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, static_cast<__nv_bfloat16*>(out), n);
      break;
  }
  return cudaGetLastError();
}

cudaError_t split_tf32(const float* in, float* hi, float* lo, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  split_tf32_kernel<<<grid_for(n), kThreads, 0, stream>>>(in, hi, lo, n);
  return cudaGetLastError();
}

cudaError_t bias_activation(const void* y, LowType y_type, const float* bias, std::int64_t channels,
                            std::int64_t positions, std::int64_t n, UnaryOp op, float alpha,
                            float beta, float* out, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const auto launch = [&](auto* typed) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(typed)>>;
    if (n < (std::int64_t{1} << 31)) {
      bias_activation_kernel<T, std::uint32_t><<<grid_for(n), kThreads, 0, stream>>>(
          typed, bias, static_cast<std::uint32_t>(channels), static_cast<std::uint32_t>(positions),
          static_cast<std::uint32_t>(n), op, alpha, beta, out);
    } else {
      bias_activation_kernel<T, std::int64_t><<<grid_for(n), kThreads, 0, stream>>>(
          typed, bias, channels, positions, n, op, alpha, beta, out);
    }
  };
  switch (y_type) {
    case LowType::kF32: launch(static_cast<const float*>(y)); break;
    case LowType::kF16: launch(static_cast<const __half*>(y)); break;
    case LowType::kBF16: launch(static_cast<const __nv_bfloat16*>(y)); break;
  }
  return cudaGetLastError();
}

cudaError_t convert_nchw_to_nhwc(const float* in, void* out, LowType type, std::int64_t batch,
                                 std::int64_t channels, std::int64_t positions,
                                 cudaStream_t stream) {
  switch (type) {
    case LowType::kF32:
      return transpose_tiles(in, static_cast<float*>(out), batch, channels, positions,
                             ToType<float>{}, stream);
    case LowType::kF16:
      return transpose_tiles(in, static_cast<__half*>(out), batch, channels, positions,
                             ToType<__half>{}, stream);
    case LowType::kBF16:
      return transpose_tiles(in, static_cast<__nv_bfloat16*>(out), batch, channels, positions,
                             ToType<__nv_bfloat16>{}, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t nhwc_bias_activation(const void* y, LowType y_type, const float* bias,
                                 std::int64_t batch, std::int64_t channels, std::int64_t positions,
                                 UnaryOp op, float alpha, float beta, float* out,
                                 cudaStream_t stream) {
  const BiasActivation finish{bias, op, alpha, beta};
  switch (y_type) {
    case LowType::kF32:
      return transpose_tiles(static_cast<const float*>(y), out, batch, positions, channels, finish,
                             stream);
    case LowType::kF16:
      return transpose_tiles(static_cast<const __half*>(y), out, batch, positions, channels, finish,
                             stream);
    case LowType::kBF16:
      return transpose_tiles(static_cast<const __nv_bfloat16*>(y), out, batch, positions, channels,
                             finish, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t naive_gemm(const NaiveGemm& shape, const float* a, const float* b, const float* bias,
                       float* d, cudaStream_t stream) {
  const std::int64_t n = shape.batch * shape.m * shape.n;
  if (n > 0) naive_gemm_kernel<<<grid_for(n), kThreads, 0, stream>>>(shape, a, b, bias, d);
  return cudaGetLastError();
}

cudaError_t im2col(const Im2Col& shape, const float* x, void* col, LowType type,
                   cudaStream_t stream) {
  const std::int64_t n = shape.batch * shape.k_rows * shape.out_h * shape.out_w;
  if (n <= 0) return cudaSuccess;
  const std::int64_t columns = shape.batch * shape.out_h * shape.out_w;
  const std::int64_t patch_rows = shape.channels * shape.kernel_h * shape.kernel_w;
  // Grid rows are limited to 65535 and the per-thread arithmetic is 32-bit.
  if (shape.k_rows <= 65535 && columns < (std::int64_t{1} << 31) - kIm2ColTile &&
      shape.channels * shape.height * shape.width < (std::int64_t{1} << 31)) {
    const Im2ColTiling t = im2col_tiling(columns, shape.k_rows);
    const int cols = static_cast<int>(columns), patch = static_cast<int>(patch_rows);
    switch (type) {
      case LowType::kF32:
        im2col_rows_kernel<<<t.grid, kThreads, 0, stream>>>(
            shape, x, static_cast<float*>(col), cols, patch, t.cols_per_block, t.rows_per_block);
        break;
      case LowType::kF16:
        im2col_rows_kernel<<<t.grid, kThreads, 0, stream>>>(
            shape, x, static_cast<__half*>(col), cols, patch, t.cols_per_block, t.rows_per_block);
        break;
      case LowType::kBF16:
        im2col_rows_kernel<<<t.grid, kThreads, 0, stream>>>(
            shape, x, static_cast<__nv_bfloat16*>(col), cols, patch, t.cols_per_block,
            t.rows_per_block);
        break;
    }
    return cudaGetLastError();
  }
  switch (type) {
    case LowType::kF32:
      im2col_kernel<<<grid_for(n), kThreads, 0, stream>>>(shape, x, static_cast<float*>(col));
      break;
    case LowType::kF16:
      im2col_kernel<<<grid_for(n), kThreads, 0, stream>>>(shape, x, static_cast<__half*>(col));
      break;
    case LowType::kBF16:
      im2col_kernel<<<grid_for(n), kThreads, 0, stream>>>(shape, x,
                                                          static_cast<__nv_bfloat16*>(col));
      break;
  }
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
