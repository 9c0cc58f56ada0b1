// The warp-level steps of the tensor-core attention kernels (attention_mma.cu converts each
// key/value tile from FP32 on the fly; attention_mma_pipelined.cu streams pre-rounded 16-bit
// tiles with cp.async): Q of a warp's 16 rows as A fragments, one key tile's scores, modifiers,
// online-softmax update and O += P V, and the final rows. Layout of m16n8k16 (lane = 4 g + t):
// mma_sync.cuh. Shared tiles are [keys][D + 8] elements (16 bytes of padding per row, so ldmatrix
// reads them without bank conflicts).
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/attention_math.h"
#include "backends/cuda/attention_ops.h"
#include "backends/cuda/mma_sync.cuh"

namespace voxrt::backends::cuda::ops {

// Q rows row0 + g and row0 + g + 8 of head h, scaled and rounded, as A fragments (columns 2t,
// 2t + 1 and + 8 of each k16 step); rows past q_len are zeros.
template <typename T, int D>
__device__ __forceinline__ void load_q_fragments(unsigned (&qa)[D / 16][4], const AttentionShape& s,
                                                 const AttentionOperands& o, std::int64_t b,
                                                 std::int64_t h, std::int64_t row0, int g, int t) {
  const auto q_at = [&](std::int64_t i, int c) {
    return i < s.q_len
               ? s.scale * o.q[b * s.q_stride[0] + h * s.q_stride[1] + i * s.q_stride[2] + c]
               : 0.0f;
  };
  const std::int64_t ra = row0 + g, rb = row0 + g + 8;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const int c = 16 * kk + 2 * t;
    qa[kk][0] = pack2<T>(q_at(ra, c), q_at(ra, c + 1));
    qa[kk][1] = pack2<T>(q_at(rb, c), q_at(rb, c + 1));
    qa[kk][2] = pack2<T>(q_at(ra, c + 8), q_at(ra, c + 9));
    qa[kk][3] = pack2<T>(q_at(rb, c + 8), q_at(rb, c + 9));
  }
}

// One key tile (keys j0 .. j0 + KT - 1 in `ks` / `vs`; keys past kv_len must be zero rows) for
// the warp's 16 rows: S = Q K^T, the modifiers in FP32, the online-softmax update of `state`
// (rows g, g + 8; each lane keeps its partial sum) and acc += P V with P kept in registers.
template <typename T, int D, int KT>
__device__ __forceinline__ void attend_key_tile(const unsigned (&qa)[D / 16][4],
                                                float (&acc)[D / 8][4], OnlineSoftmax (&state)[2],
                                                const T* ks, const T* vs, const AttentionShape& s,
                                                const AttentionOperands& o, std::int64_t b,
                                                std::int64_t h, std::int64_t row0, std::int64_t j0,
                                                int lane) {
  constexpr int kRow = D + 8;
  const int g = lane >> 2, t = lane & 3;
  const int mat = lane >> 3, mat_row = lane & 7;
  // S = Q K^T: per 8 keys (nt), two k16 steps per ldmatrix.x4.
  float sc[KT / 8][4];
#pragma unroll
  for (int nt = 0; nt < KT / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) sc[nt][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < D / 16; kk += 2) {
      unsigned bk[4];
      ldmatrix_x4(bk, ks + (8 * nt + mat_row) * kRow + 16 * kk + 8 * mat);
      const unsigned lo[2] = {bk[0], bk[1]}, hi[2] = {bk[2], bk[3]};
      mma16816<T>(sc[nt], qa[kk], lo);
      mma16816<T>(sc[nt], qa[kk + 1], hi);
    }
  }
  // Modifiers in FP32; element e of sc[nt]: row g (e < 2) or g + 8, key 8 nt + 2t + (e & 1).
  float row_max[2] = {-INFINITY, -INFINITY};
#pragma unroll
  for (int nt = 0; nt < KT / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const std::int64_t i = row0 + g + (e >> 1) * 8;
      const std::int64_t j = j0 + 8 * nt + 2 * t + (e & 1);
      const float v = i < s.q_len && j < s.kv_len
                          ? modified_score(s, sc[nt][e], b, h, i, j, o.mask, o.bias)
                          : -INFINITY;
      sc[nt][e] = v;
      row_max[e >> 1] = fmaxf(row_max[e >> 1], v);
    }
  }
  float shift[2], alpha[2];
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    // The four lanes of a quad hold one row's columns.
    row_max[x] = fmaxf(row_max[x], __shfl_xor_sync(0xffffffffu, row_max[x], 1));
    row_max[x] = fmaxf(row_max[x], __shfl_xor_sync(0xffffffffu, row_max[x], 2));
    alpha[x] = state[x].rescale(row_max[x], shift[x]);  // l is this lane's partial sum
  }
#pragma unroll
  for (int nt = 0; nt < KT / 8; ++nt) {
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      sc[nt][e] = OnlineSoftmax::p(sc[nt][e], shift[e >> 1]);
      state[e >> 1].l += sc[nt][e];
    }
  }
#pragma unroll
  for (int nd = 0; nd < D / 8; ++nd) {
    acc[nd][0] *= alpha[0];
    acc[nd][1] *= alpha[0];
    acc[nd][2] *= alpha[1];
    acc[nd][3] *= alpha[1];
  }
  // O += P V: P's k16 step kk is the accumulators of key groups 2kk and 2kk + 1.
#pragma unroll
  for (int kk = 0; kk < KT / 16; ++kk) {
    const unsigned pa[4] = {pack2<T>(sc[2 * kk][0], sc[2 * kk][1]),
                            pack2<T>(sc[2 * kk][2], sc[2 * kk][3]),
                            pack2<T>(sc[2 * kk + 1][0], sc[2 * kk + 1][1]),
                            pack2<T>(sc[2 * kk + 1][2], sc[2 * kk + 1][3])};
#pragma unroll
    for (int nd = 0; nd < D / 8; nd += 2) {
      unsigned bv[4];
      ldmatrix_x4_trans(bv,
                        vs + (16 * kk + 8 * (mat & 1) + mat_row) * kRow + 8 * (nd + (mat >> 1)));
      const unsigned lo[2] = {bv[0], bv[1]}, hi[2] = {bv[2], bv[3]};
      mma16816<T>(acc[nd], pa, lo);
      mma16816<T>(acc[nd + 1], pa, hi);
    }
  }
}

// The warp's rows of the output: the quad's partial sums added, acc / l (NaN for rows that saw
// only -inf).
template <int D>
__device__ __forceinline__ void store_rows(const float (&acc)[D / 8][4], OnlineSoftmax (&state)[2],
                                           const AttentionShape& s, const AttentionOperands& o,
                                           std::int64_t b, std::int64_t h, std::int64_t row0,
                                           int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    float l = state[x].l;
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    state[x].l = l;
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) {
    const std::int64_t i = row0 + g + 8 * x;
    if (i >= s.q_len) continue;
    float* out = o.out + b * s.out_stride[0] + h * s.out_stride[1] + i * s.out_stride[2];
#pragma unroll
    for (int nd = 0; nd < D / 8; ++nd) {
      out[8 * nd + 2 * t] = state[x].finish(acc[nd][2 * x]);
      out[8 * nd + 2 * t + 1] = state[x].finish(acc[nd][2 * x + 1]);
    }
  }
}

// Calls launch(T{}) with the 16-bit type of `operand` after the checks every tensor-core plan
// needs; FP32 is not a tensor-core operand here.
template <typename Launch>
cudaError_t with_tensor_core_type(const AttentionPlan& plan, LowType operand, Launch launch) {
  if (!plan.takes || plan.warps == 0) return cudaErrorInvalidValue;
  if (plan.blocks == 0) return cudaSuccess;
  if (plan.shared_bytes > 48 * 1024) return cudaErrorInvalidValue;  // planned within 48 KiB
  switch (operand) {
    case LowType::kF16: return launch(__half{});
    case LowType::kBF16: return launch(__nv_bfloat16{});
    case LowType::kF32: break;
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
