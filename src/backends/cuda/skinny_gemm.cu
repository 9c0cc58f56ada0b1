// The skinny GEMM (cuda_ops.h, skinny_gemm): y[m, n] = op(sum_k x[m, k] w[k, n] + bias[n]) for a
// few rows m (a streaming chunk's 16 frames, a decoder step's one token), FP32 x, the weight in
// FP16/BF16 as the engine stores it, FP32 accumulation. Such products are bound by reading the
// weight; cuBLASLt at FP16 needs x converted first and an activation pass after, three launches
// where this is one. Block (tile, split) owns 64 columns and a range of k: its 8 warps each sum
// every eighth k of the range over the 64 columns (a lane two columns, one 32-bit load of the
// weight a k, coalesced across the warp; x staged in shared memory 64 k at a time, read as
// broadcasts); the 8 partial sums meet in shared memory. With one split the block finishes the
// columns itself; with several (so that a narrow N still spreads over the multiprocessors) each
// writes its sums to `partials` and the last of a tile's blocks to arrive (an atomic ticket per
// tile, reset by that block for the next run) adds them up, adds the bias, applies the
// activation and stores.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/unary_apply.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kColumns = kSkinnyColumns;  // per block
constexpr int kSlices = 8;                // warps, each every eighth k
constexpr int kChunk = kSkinnyChunk;      // k per staged chunk of x
constexpr int kThreads = 32 * kSlices;

template <typename W>
__device__ __forceinline__ float2 pair_to_float2(unsigned bits) {
  if constexpr (std::is_same_v<W, __half>) {
    __half2 h;
    *reinterpret_cast<unsigned*>(&h) = bits;
    return __half22float2(h);
  } else {
    __nv_bfloat162 h;
    *reinterpret_cast<unsigned*>(&h) = bits;
    return __bfloat1622float2(h);
  }
}

template <typename W, int kMaxM>
__global__ void __launch_bounds__(kThreads)
    skinny_gemm_kernel(SkinnyGemm g, const float* x, const W* w, const float* bias, UnaryOp op,
                       float alpha, float beta, float* y, float* partials, unsigned* tickets) {
  __shared__ float xs[kMaxM * kChunk];
  __shared__ float sums[kSlices * kMaxM * kColumns];
  __shared__ bool last_block;
  const int lane = static_cast<int>(threadIdx.x % 32), slice = static_cast<int>(threadIdx.x / 32);
  const std::int64_t tile = blockIdx.x, split = blockIdx.y;
  const std::int64_t n_block = tile * kColumns;
  const std::int64_t n = n_block + 2 * lane;  // this lane's two columns
  const bool live = n < g.n;                  // n even and N even: both columns exist
  const std::int64_t k_begin = split * g.k_per_split;
  const std::int64_t k_end = min(g.k, k_begin + g.k_per_split);
  float acc[kMaxM][2];
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) acc[m][0] = acc[m][1] = 0.0f;
  const auto* w_pairs = reinterpret_cast<const unsigned*>(w);
  for (std::int64_t k0 = k_begin; k0 < k_end; k0 += kChunk) {
    __syncthreads();  // the previous chunk of x is consumed
    for (int e = threadIdx.x; e < kMaxM * kChunk; e += kThreads) {
      const int m = e / kChunk, kc = e % kChunk;
      xs[e] = m < g.m && k0 + kc < k_end ? x[m * g.k + k0 + kc] : 0.0f;
    }
    __syncthreads();
    if (!live) continue;
    float2 wv[kChunk / kSlices];
#pragma unroll
    for (int i = 0; i < kChunk / kSlices; ++i) {  // every load in flight before the products
      const std::int64_t k = k0 + slice + kSlices * i;
      wv[i] = k < k_end ? pair_to_float2<W>(w_pairs[(k * g.n + n) / 2]) : make_float2(0.f, 0.f);
    }
#pragma unroll
    for (int i = 0; i < kChunk / kSlices; ++i) {
      const int kc = slice + kSlices * i;
#pragma unroll
      for (int m = 0; m < kMaxM; ++m) {
        const float xv = xs[m * kChunk + kc];
        acc[m][0] += xv * wv[i].x;
        acc[m][1] += xv * wv[i].y;
      }
    }
  }
#pragma unroll
  for (int m = 0; m < kMaxM; ++m) {
    sums[(slice * kMaxM + m) * kColumns + 2 * lane] = acc[m][0];
    sums[(slice * kMaxM + m) * kColumns + 2 * lane + 1] = acc[m][1];
  }
  __syncthreads();
  // This block's sums over its k range, for (m, column c) of the tile.
  const auto block_sum = [&](int m, int c) {
    float s = 0.0f;
#pragma unroll
    for (int sl = 0; sl < kSlices; ++sl) s += sums[(sl * kMaxM + m) * kColumns + c];
    return s;
  };
  if (g.splits == 1) {
    for (int e = threadIdx.x; e < kMaxM * kColumns; e += kThreads) {
      const int m = e / kColumns, c = e % kColumns;
      const std::int64_t col = n_block + c;
      if (m >= g.m || col >= g.n) continue;
      y[m * g.n + col] = apply_unary(op, block_sum(m, c) + (bias ? bias[col] : 0.0f), alpha, beta);
    }
    return;
  }
  for (int e = threadIdx.x; e < kMaxM * kColumns; e += kThreads) {
    const int m = e / kColumns, c = e % kColumns;
    const std::int64_t col = n_block + c;
    if (m < g.m && col < g.n) partials[(split * g.m + m) * g.n + col] = block_sum(m, c);
  }
  __threadfence();  // the partial sums are visible before the ticket says so
  __syncthreads();
  if (threadIdx.x == 0) last_block = atomicAdd(&tickets[tile], 1u) == g.splits - 1;
  __syncthreads();
  if (!last_block) return;
  __threadfence();
  for (int e = threadIdx.x; e < kMaxM * kColumns; e += kThreads) {
    const int m = e / kColumns, c = e % kColumns;
    const std::int64_t col = n_block + c;
    if (m >= g.m || col >= g.n) continue;
    float s = bias ? bias[col] : 0.0f;
    for (std::int64_t p = 0; p < g.splits; ++p) s += __ldcg(&partials[(p * g.m + m) * g.n + col]);
    y[m * g.n + col] = apply_unary(op, s, alpha, beta);
  }
  if (threadIdx.x == 0) tickets[tile] = 0;  // ready for the next run (the graph replays it)
}

template <typename W>
cudaError_t launch(const SkinnyGemm& g, const float* x, const void* w, const float* bias,
                   UnaryOp op, float alpha, float beta, float* y, float* partials,
                   unsigned* tickets, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>(skinny_gemm_tiles(g)), static_cast<unsigned>(g.splits));
  const auto* wt = static_cast<const W*>(w);
#define VOXRT_SKINNY(M)                                                                       \
  skinny_gemm_kernel<W, M>                                                                    \
      <<<grid, kThreads, 0, stream>>>(g, x, wt, bias, op, alpha, beta, y, partials, tickets); \
  return cudaGetLastError();
  if (g.m <= 1) {
    VOXRT_SKINNY(1)
  } else if (g.m <= 2) {
    VOXRT_SKINNY(2)
  } else if (g.m <= 4) {
    VOXRT_SKINNY(4)
  } else if (g.m <= 8) {
    VOXRT_SKINNY(8)
  } else {
    VOXRT_SKINNY(16)
  }
#undef VOXRT_SKINNY
}

}  // namespace

cudaError_t skinny_gemm(const SkinnyGemm& g, const float* x, const void* w, LowType w_type,
                        const float* bias, UnaryOp op, float alpha, float beta, float* y,
                        float* partials, unsigned* tickets, cudaStream_t stream) {
  if (!skinny_gemm_takes(g) || (g.splits > 1 && (!partials || !tickets)))
    return cudaErrorInvalidValue;
  if (g.m == 0 || g.n == 0) return cudaSuccess;
  switch (w_type) {
    case LowType::kF16:
      return launch<__half>(g, x, w, bias, op, alpha, beta, y, partials, tickets, stream);
    case LowType::kBF16:
      return launch<__nv_bfloat16>(g, x, w, bias, op, alpha, beta, y, partials, tickets, stream);
    case LowType::kF32: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
