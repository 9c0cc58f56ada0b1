// The direct_tc convolution (conv_direct.h): an implicit GEMM on WMMA tensor cores (16x16x16,
// FP16 or BF16 operands, float accumulation). A block of 4 warps computes a tile of 64 output
// positions of one image (flattened over (oh, ow), so a tile may span output rows) for every
// output channel, and loops over tiles grid-stride so that the filter it stages is reused:
//   1. the [k_padded, OC] filter matrix and the per-k tap table go to shared memory, once;
//   2. region path (direct_conv_plan chooses it when the region fits the shared memory budget):
//      per tile, the input rows the tile reads go to shared memory once, zero-padded and in the
//      operand type (DirectConvRegion), coalesced along iw;
//   3. per 32 k: the threads gather the A chunk [64 positions, 32 k], from the region without
//      bounds checks, or on the gather path from x (float, converted on load; zero in the
//      padding, past K and past the last position), then each warp multiplies its 16 positions
//      by every 16-channel column of the filter;
//   4. the accumulators go through shared memory (float, over the A chunk's space) so that the
//      bias + activation + store of y[b, oc, p] is coalesced along the positions.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include <algorithm>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/operand_convert.cuh"
#include "backends/cuda/shared_memory_opt_in.cuh"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTilePositions = kDirectConvTilePositions;  // one 16-row WMMA tile per warp
constexpr int kChunk = kDirectConvChunk;                  // k per staged A chunk: 2 WMMA steps
constexpr int kMaxColumnTiles = static_cast<int>(kDirectConvMaxOutChannels) / 16;
constexpr int kAStride = kDirectConvAStride;
constexpr int kCStride = kDirectConvCStride;
static_assert(kTilePositions == 16 * kWarps);
// Enough blocks to fill an H200 a few times over; more would only stage the filter more often.
constexpr int kMaxBlocks = 1024;

template <typename T>
__device__ __forceinline__ unsigned pack_pair(float lo, float hi);
template <>
__device__ __forceinline__ unsigned pack_pair<__half>(float lo, float hi) {
  const __half2 v = __floats2half2_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}
template <>
__device__ __forceinline__ unsigned pack_pair<__nv_bfloat16>(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const unsigned*>(&v);
}

// kRegion: the region path (conv_direct.h, DirectConvRegion) stages each tile's input rows in
// shared memory and gathers A from there; otherwise A is gathered from x with bounds checks.
template <typename T, bool kRegion>
__global__ void __launch_bounds__(kThreads)
    direct_conv_kernel(DirectConv s, DirectConvRegion g, const float* __restrict__ x,
                       const T* __restrict__ filter, const float* __restrict__ bias, UnaryOp op,
                       float alpha, float beta, float* __restrict__ y) {
  extern __shared__ __align__(128) unsigned char shared[];
  const DirectConvLayout l = direct_conv_layout(s, g, kRegion);
  T* filter_s = reinterpret_cast<T*>(shared);
  T* a_s = reinterpret_cast<T*>(shared + l.a_offset);
  float* c_s = reinterpret_cast<float*>(shared + l.a_offset);  // over a_s, after the K loop
  DirectConvTap* taps = reinterpret_cast<DirectConvTap*>(shared + l.taps_offset);
  int* region_taps = reinterpret_cast<int*>(shared + l.taps_offset);
  T* region_s = reinterpret_cast<T*>(shared + l.region_offset);
  const unsigned short* region_bits = reinterpret_cast<const unsigned short*>(region_s);
  const int zero = g.zero(s);
  const int tid = static_cast<int>(threadIdx.x);
  const int out_channels = s.out_channels, k_padded = s.k_padded();

  // 1. The filter (rows of OC elements, OC / 8 16-byte pieces each) and the taps.
  const int pieces = out_channels / 8;
  for (int i = tid; i < k_padded * pieces; i += kThreads) {
    const int row = i / pieces, piece = i - row * pieces;
    reinterpret_cast<uint4*>(filter_s + row * l.filter_stride)[piece] =
        reinterpret_cast<const uint4*>(filter + row * out_channels)[piece];
  }
  if constexpr (kRegion) {
    for (int k = tid; k < l.taps; k += kThreads) region_taps[k] = direct_conv_region_tap(s, g, k);
    if (tid == 0) region_s[zero] = from_float<T>(0.0f);  // what taps past K read
  } else {
    for (int k = tid; k < l.taps; k += kThreads) taps[k] = direct_conv_tap(s, k);
  }
  __syncthreads();

  const int positions = s.out_h * s.out_w;
  const int tiles_per_image = (positions + kTilePositions - 1) / kTilePositions;
  const int tiles = s.batch * tiles_per_image;
  const int image_elements = s.channels * s.height * s.width;
  const int warp = tid / 32;
  const int column_tiles = out_channels / 16;
  // This thread's A element: position my_p of the tile, k from my_k (16 of them) in each chunk.
  const int my_p = tid % kTilePositions;
  const int my_k = tid / kTilePositions * (kChunk / 2);
  uint4* my_a = reinterpret_cast<uint4*>(a_s + my_p * kAStride + my_k);

  for (int tile = static_cast<int>(blockIdx.x); tile < tiles; tile += static_cast<int>(gridDim.x)) {
    const int b = tile / tiles_per_image;
    const int first = (tile - b * tiles_per_image) * kTilePositions;
    const float* x_image = x + b * image_elements;
    const int position = first + my_p;
    const bool live = position < positions;  // the last tile of an image may be partial
    const int oh = position / s.out_w, ow = position - oh * s.out_w;
    [[maybe_unused]] const DirectConvWindow window = direct_conv_window(s, oh, ow);
    const int oh_first = first / s.out_w;
    // Region path: this position's window in the region (a dead position reads from 0, dropped).
    [[maybe_unused]] const int base = live ? direct_conv_region_base(s, g, oh_first, oh, ow) : 0;
    if constexpr (kRegion) {
      // The tile's region, coalesced along iw. The previous tile ended with a __syncthreads, so
      // no warp still reads its region.
      for (int e = tid; e < zero; e += kThreads)
        region_s[e] = from_float<T>(direct_conv_region_value(s, g, x_image, oh_first, e));
      __syncthreads();
    }

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[kMaxColumnTiles];
#pragma unroll
    for (int n = 0; n < kMaxColumnTiles; ++n) wmma::fill_fragment(acc[n], 0.0f);

    for (int k0 = 0; k0 < k_padded; k0 += kChunk) {
      // 3. Gather: 16 values, stored as two 16-byte pieces.
      unsigned packed[8];
      if constexpr (kRegion) {
        // From the region: no bounds checks, already in the operand type.
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const int i0 = direct_conv_region_index(zero, base, region_taps[k0 + my_k + 2 * j]);
          const int i1 = direct_conv_region_index(zero, base, region_taps[k0 + my_k + 2 * j + 1]);
          packed[j] = static_cast<unsigned>(region_bits[i0]) |
                      (static_cast<unsigned>(region_bits[i1]) << 16);
        }
      } else {
#pragma unroll
        for (int j = 0; j < 8; ++j) {
          const DirectConvTap& t0 = taps[k0 + my_k + 2 * j];
          const DirectConvTap& t1 = taps[k0 + my_k + 2 * j + 1];
          const float lo = live ? direct_conv_input(s, x_image, window, t0) : 0.0f;
          const float hi = live ? direct_conv_input(s, x_image, window, t1) : 0.0f;
          packed[j] = pack_pair<T>(lo, hi);
        }
      }
      my_a[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
      my_a[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
      __syncthreads();
#pragma unroll
      for (int step = 0; step < kChunk / 16; ++step) {
        const int k = k0 + step * 16;
        if (k < k_padded) {  // the last chunk may hold only 16 rows of the filter
          wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
          wmma::load_matrix_sync(a, a_s + warp * 16 * kAStride + step * 16, kAStride);
#pragma unroll
          for (int n = 0; n < kMaxColumnTiles; ++n) {
            if (n < column_tiles) {
              wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> w;
              wmma::load_matrix_sync(w, filter_s + k * l.filter_stride + n * 16,
                                     static_cast<unsigned>(l.filter_stride));
              wmma::mma_sync(acc[n], a, w, acc[n]);
            }
          }
        }
      }
      __syncthreads();  // before the next chunk (or C) overwrites a_s
    }

    // 4. C [OC, 64 positions] (column-major fragments: position fastest), then y.
#pragma unroll
    for (int n = 0; n < kMaxColumnTiles; ++n) {
      if (n < column_tiles)
        wmma::store_matrix_sync(c_s + n * 16 * kCStride + warp * 16, acc[n], kCStride,
                                wmma::mem_col_major);
    }
    __syncthreads();
    float* y_image = y + b * out_channels * positions;
    for (int i = tid; i < out_channels * kTilePositions; i += kThreads) {
      const int oc = i / kTilePositions, p = i - oc * kTilePositions;
      if (first + p < positions) {
        const float v = c_s[oc * kCStride + p] + (bias ? bias[oc] : 0.0f);
        y_image[oc * positions + first + p] = apply_unary(op, v, alpha, beta);
      }
    }
    __syncthreads();  // c_s lies over a_s (and the region is read): the next tile writes them
  }
}

// Above 48 KiB of shared memory a kernel must opt in; once per kernel and process, on the first
// launch whatever its size (an eager one), so never inside a graph capture.
template <typename T, bool kRegion>
cudaError_t opt_in_shared_memory() {
  static const cudaError_t opted_in = allow_max_dynamic_shared_memory(
      reinterpret_cast<const void*>(direct_conv_kernel<T, kRegion>));
  return opted_in;
}

template <typename T>
cudaError_t launch_direct_conv(const DirectConv& s, const float* x, const T* filter,
                               const float* bias, UnaryOp op, float alpha, float beta, float* y,
                               cudaStream_t stream) {
  const int positions = s.out_h * s.out_w;
  const int tiles = s.batch * ((positions + kTilePositions - 1) / kTilePositions);
  if (tiles <= 0) return cudaSuccess;
  // Both instantiations opt in on the first launch (eager), so that a later launch of the other
  // path inside a graph capture needs no attribute call.
  const cudaError_t region_opted_in = opt_in_shared_memory<T, true>();
  if (region_opted_in != cudaSuccess) return region_opted_in;
  const cudaError_t gather_opted_in = opt_in_shared_memory<T, false>();
  if (gather_opted_in != cudaSuccess) return gather_opted_in;
  const DirectConvLayout l = direct_conv_plan(s);
  // The gather path ignores the region (whose size may not even fit in 32 bits there).
  const DirectConvRegion g = l.region ? direct_conv_region(s) : DirectConvRegion{};
  const auto blocks = static_cast<unsigned>(std::min(tiles, kMaxBlocks));
  const auto bytes = static_cast<std::size_t>(l.bytes);
  if (l.region)
    direct_conv_kernel<T, true>
        <<<blocks, kThreads, bytes, stream>>>(s, g, x, filter, bias, op, alpha, beta, y);
  else
    direct_conv_kernel<T, false>
        <<<blocks, kThreads, bytes, stream>>>(s, g, x, filter, bias, op, alpha, beta, y);
  return cudaGetLastError();
}

}  // namespace

cudaError_t direct_conv(const DirectConv& shape, const float* x, const void* filter, LowType type,
                        const float* bias, UnaryOp op, float alpha, float beta, float* y,
                        cudaStream_t stream) {
  if (shape.out_channels % 16 != 0 || shape.out_channels > kDirectConvMaxOutChannels ||
      shape.out_channels <= 0 || shape.k() > kDirectConvMaxK)
    return cudaErrorInvalidValue;
  switch (type) {
    case LowType::kF16:
      return launch_direct_conv(shape, x, static_cast<const __half*>(filter), bias, op, alpha, beta,
                                y, stream);
    case LowType::kBF16:
      return launch_direct_conv(shape, x, static_cast<const __nv_bfloat16*>(filter), bias, op,
                                alpha, beta, y, stream);
    case LowType::kF32: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
