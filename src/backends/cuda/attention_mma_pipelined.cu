// The pipelined tensor-core attention kernels (attention_launch.h, kMmaPipelinedRows64/128).
// attention_mma.cu converts every key/value tile from FP32 while the block waits: each of a
// head's query blocks reads K and V as FP32 again and nothing overlaps the loads. Here one
// launch first rounds K and V of every (batch, key/value head) once into 16-bit rows in scratch
// (zero rows up to a whole number of tiles), and the attention kernel then streams those tiles
// into shared memory with cp.async, two stages deep: tile n + 1 is in flight while the warps
// compute tile n (attention_mma_tile.cuh, the same warp steps as attention_mma.cu). Half the
// bytes per tile, no conversion in the loop, and the memory latency hidden behind the MMAs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/attention_mma_tile.cuh"
#include "backends/cuda/operand_convert.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

// K and V [b][kv_h][j][c] (any strides) -> [b * kv_heads + kv_h][kv_padded][D] in T, zeros past
// kv_len.
template <typename T>
__global__ void round_key_values_kernel(AttentionShape s, const float* k, const float* v, T* k16,
                                        T* v16, std::int64_t kv_padded) {
  const std::int64_t d = s.key_dim;
  const std::int64_t total = s.batch * s.kv_heads * kv_padded * d;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t c = e % d;
    const std::int64_t j = (e / d) % kv_padded;
    const std::int64_t bh = e / (d * kv_padded);
    const std::int64_t b = bh / s.kv_heads, h = bh % s.kv_heads;
    float kf = 0.0f, vf = 0.0f;
    if (j < s.kv_len) {
      kf = k[b * s.k_stride[0] + h * s.k_stride[1] + j * s.k_stride[2] + c];
      vf = v[b * s.v_stride[0] + h * s.v_stride[1] + j * s.v_stride[2] + c];
    }
    k16[e] = from_float<T>(kf);
    v16[e] = from_float<T>(vf);
  }
}

__device__ __forceinline__ void copy_16_bytes_async(void* shared, const void* global) {
  const auto address = static_cast<unsigned>(__cvta_generic_to_shared(shared));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(address), "l"(global));
}
__device__ __forceinline__ void commit_async_copies() {
  asm volatile("cp.async.commit_group;");
}
template <int kPending>
__device__ __forceinline__ void wait_async_copies() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending));
}

template <typename T, int D, int W, int KT>
__global__ void __launch_bounds__(W * 32)
    attention_mma_pipelined_kernel(AttentionShape s, AttentionOperands o, const T* k16,
                                   const T* v16, std::int64_t kv_padded) {
  static_assert(D % 32 == 0 && KT % 16 == 0, "tile sizes");
  constexpr int kRow = D + 8;  // shared row in elements: 16 bytes of padding
  constexpr int kRows = 16 * W;
  constexpr int kTile = KT * kRow;           // elements of one K (or V) tile
  constexpr int kChunksPerRow = D * 2 / 16;  // 16-byte pieces of a 16-bit row
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* tiles = reinterpret_cast<T*>(shared_bytes);  // [stage][K, V][KT][kRow]

  const std::int64_t q_tiles = (s.q_len + kRows - 1) / kRows;
  const std::int64_t i0 = (blockIdx.x % q_tiles) * kRows;
  const std::int64_t h = (blockIdx.x / q_tiles) % s.heads;
  const std::int64_t b = blockIdx.x / (q_tiles * s.heads);
  const std::int64_t kv_h = h / (s.heads / s.kv_heads);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t row0 = i0 + 16 * warp;  // this warp's first query row
  const bool warp_active = row0 < s.q_len;

  const std::int64_t last_row = min(i0 + kRows, s.q_len) - 1;
  const std::int64_t key_end = min(s.kv_len, causal_key_limit(s, last_row));
  const std::int64_t key_tiles = key_end > 0 ? (key_end + KT - 1) / KT : 0;
  const T* k_rows = k16 + (b * s.kv_heads + kv_h) * kv_padded * D;
  const T* v_rows = v16 + (b * s.kv_heads + kv_h) * kv_padded * D;
  // Every tile lies inside the padded rows, so the copies need no bounds checks.
  const auto issue_tile = [&](std::int64_t tile, int stage) {
    T* ks = tiles + stage * 2 * kTile;
    T* vs = ks + kTile;
    const std::int64_t first = tile * KT;
    for (int e = threadIdx.x; e < KT * kChunksPerRow; e += W * 32) {
      const int r = e / kChunksPerRow, c = (e % kChunksPerRow) * 8;
      copy_16_bytes_async(ks + r * kRow + c, k_rows + (first + r) * D + c);
      copy_16_bytes_async(vs + r * kRow + c, v_rows + (first + r) * D + c);
    }
    commit_async_copies();
  };
  if (key_tiles > 0) issue_tile(0, 0);

  unsigned qa[D / 16][4];
  load_q_fragments<T, D>(qa, s, o, b, h, row0, lane >> 2, lane & 3);
  float acc[D / 8][4];
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nd][e] = 0.0f;
  OnlineSoftmax state[2];  // rows g and g + 8

  for (std::int64_t tile = 0; tile < key_tiles; ++tile) {
    const int stage = static_cast<int>(tile & 1);
    if (tile + 1 < key_tiles) {
      issue_tile(tile + 1, stage ^ 1);
      wait_async_copies<1>();  // this tile has landed; the next may still be in flight
    } else {
      wait_async_copies<0>();
    }
    __syncthreads();  // every thread's copies of this tile are visible
    const T* ks = tiles + stage * 2 * kTile;
    if (warp_active)
      attend_key_tile<T, D, KT>(qa, acc, state, ks, ks + kTile, s, o, b, h, row0, tile * KT, lane);
    __syncthreads();  // nobody reads this stage when the next iteration refills it
  }
  if (warp_active) store_rows<D>(acc, state, s, o, b, h, row0, lane);
}

template <typename T, int D, int W, int KT>
cudaError_t launch(const AttentionShape& s, const AttentionPlan& plan, const AttentionOperands& o,
                   cudaStream_t stream) {
  const std::int64_t kv_padded = pipelined_kv_padded(s, plan.key_tile);
  T* k16 = static_cast<T*>(o.scratch);
  T* v16 = reinterpret_cast<T*>(static_cast<unsigned char*>(o.scratch) +
                                pipelined_rounded_bytes(s, plan.key_tile));
  const std::int64_t elements = s.batch * s.kv_heads * kv_padded * D;
  if (elements > 0) {
    const std::int64_t blocks = std::min<std::int64_t>((elements + 255) / 256, 4096);
    round_key_values_kernel<T>
        <<<static_cast<unsigned>(blocks), 256, 0, stream>>>(s, o.k, o.v, k16, v16, kv_padded);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  attention_mma_pipelined_kernel<T, D, W, KT>
      <<<static_cast<unsigned>(plan.blocks), W * 32, static_cast<std::size_t>(plan.shared_bytes),
         stream>>>(s, o, k16, v16, kv_padded);
  return cudaGetLastError();
}

template <typename T, int W>
cudaError_t launch_for_dim(const AttentionShape& s, const AttentionPlan& plan,
                           const AttentionOperands& o, cudaStream_t stream) {
  // The key tile per head dim is pipelined_key_tile()'s (attention_launch.h).
  switch (s.key_dim) {
    case 32: return launch<T, 32, W, 64>(s, plan, o, stream);
    case 64: return launch<T, 64, W, 64>(s, plan, o, stream);
    case 128: return launch<T, 128, W, 32>(s, plan, o, stream);
    default: return cudaErrorInvalidValue;
  }
}

template <typename T>
cudaError_t launch_for_warps(const AttentionShape& s, const AttentionPlan& plan,
                             const AttentionOperands& o, cudaStream_t stream) {
  if (plan.key_tile != pipelined_key_tile(s.key_dim)) return cudaErrorInvalidValue;
  if (plan.warps == 4) return launch_for_dim<T, 4>(s, plan, o, stream);
  if (plan.warps == 8) return launch_for_dim<T, 8>(s, plan, o, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t attention_mma_pipelined(const AttentionShape& shape, const AttentionPlan& plan,
                                    LowType operand, const AttentionOperands& operands,
                                    cudaStream_t stream) {
  if (operands.scratch == nullptr && plan.scratch_bytes > 0) return cudaErrorInvalidValue;
  return with_tensor_core_type(plan, operand, [&](auto zero) {
    return launch_for_warps<decltype(zero)>(shape, plan, operands, stream);
  });
}

}  // namespace voxrt::backends::cuda::ops
