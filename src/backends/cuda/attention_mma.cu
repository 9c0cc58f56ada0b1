// The tensor-core attention kernels (attention_launch.h, kMmaRows16/32/64): flash attention with
// mma.sync m16n8k16. A block of W warps takes 16 W query rows of one head; each warp keeps its
// 16 rows of Q (scaled, rounded to FP16/BF16) as A fragments in registers for the whole launch.
// Key/value tiles of KT keys are converted from FP32 into shared memory (rows padded by 8
// elements, so ldmatrix reads them without bank conflicts); per tile a warp computes its 16 x KT
// scores S = Q K^T with FP32 accumulation, applies bias, mask and causal in FP32, updates its
// rows' running maximum and sum (FP32), turns the probabilities into A fragments in registers
// (the accumulator layout of m16n8 is the A layout of k16, so P never goes to memory) and
// accumulates O += P V. No score matrix exists outside registers. Rows of -inf end as NaN, as
// the op's semantics say (attention_score.cuh).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/attention_mma_tile.cuh"
#include "backends/cuda/operand_convert.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

// vec: K and V rows start 16-byte aligned (base and row strides), so float4 loads are safe.
template <typename T, int D, int W, int KT>
__global__ void __launch_bounds__(W * 32)
    attention_mma_kernel(AttentionShape s, AttentionOperands o, bool vec) {
  static_assert(D % 32 == 0 && KT % 16 == 0, "tile sizes");
  constexpr int kRow = D + 8;  // shared row in elements: 16 bytes of padding
  constexpr int kRows = 16 * W;
  extern __shared__ __align__(16) unsigned char shared_bytes[];
  T* ks = reinterpret_cast<T*>(shared_bytes);  // [KT][kRow]
  T* vs = ks + KT * kRow;                      // [KT][kRow]

  const std::int64_t q_tiles = (s.q_len + kRows - 1) / kRows;
  const std::int64_t i0 = (blockIdx.x % q_tiles) * kRows;
  const std::int64_t h = (blockIdx.x / q_tiles) % s.heads;
  const std::int64_t b = blockIdx.x / (q_tiles * s.heads);
  const std::int64_t kv_h = h / (s.heads / s.kv_heads);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int g = lane >> 2, t = lane & 3;
  const std::int64_t row0 = i0 + 16 * warp;  // this warp's first query row
  const bool warp_active = row0 < s.q_len;

  unsigned qa[D / 16][4];
  load_q_fragments<T, D>(qa, s, o, b, h, row0, g, t);
  float acc[D / 8][4];
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[nd][e] = 0.0f;
  OnlineSoftmax state[2];  // rows g and g + 8

  const float* k_base = o.k + b * s.k_stride[0] + kv_h * s.k_stride[1];
  const float* v_base = o.v + b * s.v_stride[0] + kv_h * s.v_stride[1];
  const std::int64_t last_row = min(i0 + kRows, s.q_len) - 1;
  const std::int64_t key_end = min(s.kv_len, causal_key_limit(s, last_row));
  for (std::int64_t j0 = 0; j0 < key_end; j0 += KT) {
    __syncthreads();  // every warp is done with the previous tile
    for (int e = threadIdx.x; e < KT * D / 4; e += W * 32) {
      const int r = e / (D / 4), c = (e % (D / 4)) * 4;
      const std::int64_t j = j0 + r;
      float kf[4] = {0.0f, 0.0f, 0.0f, 0.0f}, vf[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      if (j < s.kv_len) {
        const float* kr = k_base + j * s.k_stride[2] + c;
        const float* vr = v_base + j * s.v_stride[2] + c;
        if (vec) {
          const float4 k4 = *reinterpret_cast<const float4*>(kr);
          const float4 v4 = *reinterpret_cast<const float4*>(vr);
          kf[0] = k4.x, kf[1] = k4.y, kf[2] = k4.z, kf[3] = k4.w;
          vf[0] = v4.x, vf[1] = v4.y, vf[2] = v4.z, vf[3] = v4.w;
        } else {
#pragma unroll
          for (int x = 0; x < 4; ++x) kf[x] = kr[x], vf[x] = vr[x];
        }
      }
      // Rows past the keys are zeros: their scores are made -inf below, and 0 * V stays 0.
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        ks[r * kRow + c + x] = from_float<T>(kf[x]);
        vs[r * kRow + c + x] = from_float<T>(vf[x]);
      }
    }
    __syncthreads();
    if (warp_active) attend_key_tile<T, D, KT>(qa, acc, state, ks, vs, s, o, b, h, row0, j0, lane);
  }
  if (warp_active) store_rows<D>(acc, state, s, o, b, h, row0, lane);
}

template <typename T, int D, int W, int KT>
cudaError_t launch(const AttentionShape& s, const AttentionPlan& plan, const AttentionOperands& o,
                   cudaStream_t stream) {
  const auto aligned = [](const void* p, std::int64_t row_stride) {
    return (reinterpret_cast<std::uintptr_t>(p) & 15) == 0 && row_stride % 4 == 0;
  };
  const bool vec = aligned(o.k, s.k_stride[2]) && aligned(o.v, s.v_stride[2]) &&
                   s.k_stride[0] % 4 == 0 && s.k_stride[1] % 4 == 0 && s.v_stride[0] % 4 == 0 &&
                   s.v_stride[1] % 4 == 0;
  attention_mma_kernel<T, D, W, KT>
      <<<static_cast<unsigned>(plan.blocks), W * 32, static_cast<std::size_t>(plan.shared_bytes),
         stream>>>(s, o, vec);
  return cudaGetLastError();
}

template <typename T, int W, int KT>
cudaError_t launch_for_dim(const AttentionShape& s, const AttentionPlan& plan,
                           const AttentionOperands& o, cudaStream_t stream) {
  switch (s.key_dim) {
    case 32: return launch<T, 32, W, KT>(s, plan, o, stream);
    case 64: return launch<T, 64, W, KT>(s, plan, o, stream);
    case 128: return launch<T, 128, W, KT>(s, plan, o, stream);
    default: return cudaErrorInvalidValue;
  }
}

template <typename T>
cudaError_t launch_for_tile(const AttentionShape& s, const AttentionPlan& plan,
                            const AttentionOperands& o, cudaStream_t stream) {
  if (plan.warps == 1 && plan.key_tile == 32) return launch_for_dim<T, 1, 32>(s, plan, o, stream);
  if (plan.warps == 2 && plan.key_tile == 64) return launch_for_dim<T, 2, 64>(s, plan, o, stream);
  if (plan.warps == 4 && plan.key_tile == 64) return launch_for_dim<T, 4, 64>(s, plan, o, stream);
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t attention_mma(const AttentionShape& shape, const AttentionPlan& plan, LowType operand,
                          const AttentionOperands& operands, cudaStream_t stream) {
  return with_tensor_core_type(plan, operand, [&](auto zero) {
    return launch_for_tile<decltype(zero)>(shape, plan, operands, stream);
  });
}

}  // namespace voxrt::backends::cuda::ops
