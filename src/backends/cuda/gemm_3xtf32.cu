// FP32-accurate GEMM on TF32 tensor cores in one pass (cuda_ops.h, gemm_3xtf32_nt): each FP32
// operand is split in registers into hi = its TF32 rounding and lo = the rest, and the product is
// accumulated as a_lo b_hi + a_hi b_lo + a_hi b_hi by mma.sync m16n8k8 in float. The three
// cuBLASLt TF32 GEMMs of SplitTf32Gemm read B (the weights) three times from memory, as two
// pre-split halves; here B is read once, in FP32, and nothing is split ahead of time. Made for the
// input projection of an FP32 LSTM layer (m = steps, ~100; n = 4 gates x H x directions, 8192;
// k = 2048), which is bound by streaming B: 64 MB a layer.
//
// Block: 8 warps, a tile of 128 rows of A x 64 rows of B (n); warp w takes rows 16w .. 16w + 15
// of A against all 64 columns (8 m16n8 tiles; warps whose rows are all past m skip the math).
// k advances 32 at a time through a 3-stage cp.async pipeline into shared memory; rows are
// padded to 36 floats, so every fragment load (lane (g, t) reads row g, column t) hits 32
// different banks.
#include <cstdint>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/shared_memory_opt_in.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kBM = 128, kBN = 64, kBK = 32, kStages = 3;
constexpr int kWarps = kBM / 16;
constexpr int kThreads = kWarps * 32;
constexpr int kStride = kBK + 4;  // floats per shared row
constexpr int kStageFloats = (kBM + kBN) * kStride;
constexpr std::size_t kSharedBytes = kStages * kStageFloats * sizeof(float);

__device__ __forceinline__ void split_tf32(float x, unsigned& hi, unsigned& lo) {
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(hi) : "f"(x));
  // Exact in FP32; the mma reads its top 19 bits (the rest is ~2^-22 of x).
  lo = __float_as_uint(x - __uint_as_float(hi));
}

__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4],
                                         const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// 16 bytes global -> shared, zeros when !valid (src must still be a mapped address).
__device__ __forceinline__ void copy16(float* dst, const float* src, bool valid) {
  const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  const int bytes = valid ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(shared), "l"(src), "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// The k-tile `tile` of A (rows m0 ..) and B (rows n0 ..) into stage `stage`.
__device__ __forceinline__ void load_tile(float* smem, int stage, int tile, const float* a,
                                          const float* b, int m0, int n0, int m, int k) {
  float* sa = smem + stage * kStageFloats;
  float* sb = sa + kBM * kStride;
  const int k0 = tile * kBK;
  constexpr int kChunks = kBK / 4;  // 16-byte pieces of a row
#pragma unroll
  for (int i = threadIdx.x; i < kBM * kChunks; i += kThreads) {
    const int row = i / kChunks, chunk = i % kChunks;
    const bool valid = m0 + row < m;
    const float* src = a + static_cast<std::int64_t>(valid ? m0 + row : 0) * k + k0 + chunk * 4;
    copy16(sa + row * kStride + chunk * 4, src, valid);
  }
#pragma unroll
  for (int i = threadIdx.x; i < kBN * kChunks; i += kThreads) {
    const int row = i / kChunks, chunk = i % kChunks;
    copy16(sb + row * kStride + chunk * 4,
           b + static_cast<std::int64_t>(n0 + row) * k + k0 + chunk * 4, true);
  }
}

__global__ void __launch_bounds__(kThreads)
    gemm_3xtf32_nt_kernel(const float* __restrict__ a, const float* __restrict__ b,
                          const float* __restrict__ bias, float* __restrict__ d, int m, int n,
                          int k) {
  extern __shared__ __align__(16) float smem[];
  const int n0 = blockIdx.x * kBN, m0 = blockIdx.y * kBM;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4;
  const int tiles = k / kBK;
  const bool has_rows = m0 + warp * 16 < m;  // warp-uniform
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < tiles) load_tile(smem, s, s, a, b, m0, n0, m, k);
    commit();
  }
  float acc[kBN / 8][4] = {};
  for (int tile = 0; tile < tiles; ++tile) {
    // Tile `tile` has landed; every warp is done with the stage the next load overwrites (the
    // one computed in the iteration before).
    asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 2) : "memory");
    __syncthreads();
    const int next = tile + kStages - 1;
    if (next < tiles) load_tile(smem, next % kStages, next, a, b, m0, n0, m, k);
    commit();
    if (!has_rows) continue;
    const float* sa = smem + (tile % kStages) * kStageFloats + warp * 16 * kStride;
    const float* sb = smem + (tile % kStages) * kStageFloats + kBM * kStride;
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 8) {
      unsigned a_hi[4], a_lo[4];
      split_tf32(sa[g * kStride + kk + t], a_hi[0], a_lo[0]);
      split_tf32(sa[(g + 8) * kStride + kk + t], a_hi[1], a_lo[1]);
      split_tf32(sa[g * kStride + kk + t + 4], a_hi[2], a_lo[2]);
      split_tf32(sa[(g + 8) * kStride + kk + t + 4], a_hi[3], a_lo[3]);
#pragma unroll
      for (int nt = 0; nt < kBN / 8; ++nt) {
        unsigned b_hi[2], b_lo[2];
        split_tf32(sb[(nt * 8 + g) * kStride + kk + t], b_hi[0], b_lo[0]);
        split_tf32(sb[(nt * 8 + g) * kStride + kk + t + 4], b_hi[1], b_lo[1]);
        // The small terms first.
        mma_tf32(acc[nt], a_lo, b_hi);
        mma_tf32(acc[nt], a_hi, b_lo);
        mma_tf32(acc[nt], a_hi, b_hi);
      }
    }
  }
  if (!has_rows) return;
  // Lane (g, t) holds rows g and g + 8 of its warp's 16, columns 2t and 2t + 1 of each n8 tile.
  const int row0 = m0 + warp * 16 + g, row1 = row0 + 8;
#pragma unroll
  for (int nt = 0; nt < kBN / 8; ++nt) {
    const int col = n0 + nt * 8 + 2 * t;
    const float2 add = bias ? *reinterpret_cast<const float2*>(bias + col) : make_float2(0.f, 0.f);
    if (row0 < m) {
      *reinterpret_cast<float2*>(d + static_cast<std::int64_t>(row0) * n + col) =
          make_float2(acc[nt][0] + add.x, acc[nt][1] + add.y);
    }
    if (row1 < m) {
      *reinterpret_cast<float2*>(d + static_cast<std::int64_t>(row1) * n + col) =
          make_float2(acc[nt][2] + add.x, acc[nt][3] + add.y);
    }
  }
}

}  // namespace

bool gemm_3xtf32_nt_applies(std::int64_t n, std::int64_t k) {
  return n > 0 && k > 0 && n % kBN == 0 && k % kBK == 0 && n <= (1ll << 30) && k <= (1ll << 30);
}

cudaError_t gemm_3xtf32_nt(const float* a, const float* b, const float* bias, float* d,
                           std::int64_t m, std::int64_t n, std::int64_t k, cudaStream_t stream) {
  const auto aligned = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; };
  if (!gemm_3xtf32_nt_applies(n, k) || m < 0 || m > (1ll << 30) || !aligned(a) || !aligned(b) ||
      !aligned(d) || (bias && !aligned(bias)))
    return cudaErrorInvalidValue;
  if (m == 0) return cudaSuccess;
  static const cudaError_t opted_in =
      allow_max_dynamic_shared_memory(reinterpret_cast<const void*>(gemm_3xtf32_nt_kernel));
  if (opted_in != cudaSuccess) return opted_in;
  const dim3 grid(static_cast<unsigned>(n / kBN), static_cast<unsigned>((m + kBM - 1) / kBM));
  gemm_3xtf32_nt_kernel<<<grid, kThreads, kSharedBytes, stream>>>(
      a, b, bias, d, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k));
  return cudaGetLastError();
}

}  // namespace voxrt::backends::cuda::ops
