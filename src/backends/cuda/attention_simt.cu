// The FP32 attention kernels on CUDA cores (attention_launch.h): the naive reference, the tiled
// kernel (a block of 16 query rows, keys in tiles of 32 in shared memory, online softmax) and
// the split-keys kernel for decoder steps (each block a partial softmax over a range of keys,
// then one launch combines them). And attention(), which dispatches to every kernel.
#include <cmath>

#include "backends/cuda/attention_math.h"
#include "backends/cuda/attention_ops.h"
#include "backends/cuda/warp_reduce.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

// Row r of the [batch, heads, q_len] rows: its batch, head, position and key/value head.
struct RowIndex {
  std::int64_t b, h, i, kv_h;
};
__device__ __forceinline__ RowIndex row_index(const AttentionShape& s, std::int64_t row) {
  RowIndex r;
  r.i = row % s.q_len;
  r.h = (row / s.q_len) % s.heads;
  r.b = row / (s.q_len * s.heads);
  r.kv_h = r.h / (s.heads / s.kv_heads);
  return r;
}
template <typename F>
__device__ __forceinline__ F* at(F* base, const std::int64_t (&stride)[3], std::int64_t b,
                                 std::int64_t h, std::int64_t row) {
  return base + b * stride[0] + h * stride[1] + row * stride[2];
}

// One warp per query row; every score recomputed in each pass, exp() in full precision.
__global__ void attention_reference_kernel(AttentionShape s, AttentionOperands o) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 4 + warp;
  if (row >= s.batch * s.heads * s.q_len) return;
  const RowIndex r = row_index(s, row);
  const float* q = at(o.q, s.q_stride, r.b, r.h, r.i);
  // Lane-by-lane dot products (passes 1 and 2), warp-wide ones (pass 3).
  const auto lane_score = [&](std::int64_t j) {
    const float* k = at(o.k, s.k_stride, r.b, r.kv_h, j);
    float dot = 0.0f;
    for (std::int64_t d = 0; d < s.key_dim; ++d) dot += q[d] * k[d];
    return modified_score(s, s.scale * dot, r.b, r.h, r.i, j, o.mask, o.bias);
  };
  float m = -INFINITY;
  for (std::int64_t j = lane; j < s.kv_len; j += 32) m = fmaxf(m, lane_score(j));
  m = warp_max(m);
  float sum = 0.0f;
  for (std::int64_t j = lane; j < s.kv_len; j += 32) sum += expf(lane_score(j) - m);
  sum = warp_sum(sum);
  float* out = at(o.out, s.out_stride, r.b, r.h, r.i);
  for (std::int64_t d0 = 0; d0 < s.value_dim; d0 += 32) {
    const std::int64_t d = d0 + lane;
    float acc = 0.0f;
    for (std::int64_t j = 0; j < s.kv_len; ++j) {
      const float* k = at(o.k, s.k_stride, r.b, r.kv_h, j);
      float part = 0.0f;
      for (std::int64_t c = lane; c < s.key_dim; c += 32) part += q[c] * k[c];
      const float score =
          modified_score(s, s.scale * warp_sum(part), r.b, r.h, r.i, j, o.mask, o.bias);
      if (d < s.value_dim) acc += expf(score - m) * at(o.v, s.v_stride, r.b, r.kv_h, j)[d];
    }
    // No keys: NaN (an empty softmax); m == -inf made every term NaN already.
    if (d < s.value_dim) out[d] = s.kv_len == 0 ? NAN : acc / sum;
  }
}

// 16 query rows of one head a block, 4 warps of 4 rows each; keys in tiles of 32 (one a lane).
template <int kDvLanes>
__global__ void attention_simt_kernel(AttentionShape s, AttentionOperands o) {
  extern __shared__ float shared[];
  const std::int64_t dk = s.key_dim, dv = s.value_dim;
  float* qs = shared;                     // [kSimtRows][dk]
  float* ks = qs + kSimtRows * dk;        // [kSimtKeys][dk + 1]
  float* vs = ks + kSimtKeys * (dk + 1);  // [kSimtKeys][dv]
  float* ps = vs + kSimtKeys * dv;        // [kSimtRows][kSimtKeys]
  const std::int64_t q_tiles = (s.q_len + kSimtRows - 1) / kSimtRows;
  const std::int64_t i0 = (blockIdx.x % q_tiles) * kSimtRows;
  const std::int64_t h = (blockIdx.x / q_tiles) % s.heads;
  const std::int64_t b = blockIdx.x / (q_tiles * s.heads);
  const std::int64_t kv_h = h / (s.heads / s.kv_heads);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  for (std::int64_t e = threadIdx.x; e < kSimtRows * dk; e += blockDim.x) {
    const std::int64_t i = i0 + e / dk;
    qs[e] = i < s.q_len ? at(o.q, s.q_stride, b, h, i)[e % dk] : 0.0f;
  }
  constexpr int kRowsPerWarp = kSimtRows / 4;
  OnlineSoftmax state[kRowsPerWarp];
  float acc[kRowsPerWarp][kDvLanes];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int c = 0; c < kDvLanes; ++c) acc[r][c] = 0.0f;
  const std::int64_t last_row = min(i0 + kSimtRows, s.q_len) - 1;
  const std::int64_t key_end = min(s.kv_len, causal_key_limit(s, last_row));
  for (std::int64_t j0 = 0; j0 < key_end; j0 += kSimtKeys) {
    __syncthreads();  // the previous tile is consumed (and, the first time, Q is stored)
    for (std::int64_t e = threadIdx.x; e < kSimtKeys * dk; e += blockDim.x) {
      const std::int64_t j = j0 + e / dk;
      ks[(e / dk) * (dk + 1) + e % dk] =
          j < s.kv_len ? at(o.k, s.k_stride, b, kv_h, j)[e % dk] : 0.0f;
    }
    for (std::int64_t e = threadIdx.x; e < kSimtKeys * dv; e += blockDim.x) {
      const std::int64_t j = j0 + e / dv;
      vs[e] = j < s.kv_len ? at(o.v, s.v_stride, b, kv_h, j)[e % dv] : 0.0f;
    }
    __syncthreads();
    const std::int64_t j = j0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r;
      const std::int64_t i = i0 + row;
      float score = -INFINITY;
      if (j < s.kv_len && i < s.q_len) {
        float dot = 0.0f;
        const float* qr = qs + row * dk;
        const float* kr = ks + lane * (dk + 1);
        for (std::int64_t d = 0; d < dk; ++d) dot += qr[d] * kr[d];
        score = modified_score(s, s.scale * dot, b, h, i, j, o.mask, o.bias);
      }
      float shift;
      const float alpha = state[r].rescale(warp_max(score), shift);
      const float p = OnlineSoftmax::p(score, shift);
      state[r].l += warp_sum(p);
      ps[row * kSimtKeys + lane] = p;
#pragma unroll
      for (int c = 0; c < kDvLanes; ++c) acc[r][c] *= alpha;
    }
    __syncwarp();
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const float* pr = ps + (warp * kRowsPerWarp + r) * kSimtKeys;
      for (int jj = 0; jj < kSimtKeys; ++jj) {
        const float p = pr[jj];
#pragma unroll
        for (int c = 0; c < kDvLanes; ++c) {
          const std::int64_t d = lane + 32 * c;
          if (d < dv) acc[r][c] += p * vs[jj * dv + d];
        }
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const std::int64_t i = i0 + warp * kRowsPerWarp + r;
    if (i >= s.q_len) continue;
    float* out = at(o.out, s.out_stride, b, h, i);
#pragma unroll
    for (int c = 0; c < kDvLanes; ++c) {
      const std::int64_t d = lane + 32 * c;
      if (d < dv) out[d] = state[r].finish(acc[r][c]);
    }
  }
}

// One (row, key range) a block; each warp a key at a time (lanes over the head dims), then the
// four warps' partial softmaxes merged into scratch [rows][splits][2 + dv] as (max, sum, sum of
// p v).
template <int kDvLanes>
__global__ void attention_split_kernel(AttentionShape s, AttentionOperands o, std::int64_t splits,
                                       std::int64_t keys_per_split) {
  extern __shared__ float shared[];
  const std::int64_t dk = s.key_dim, dv = s.value_dim;
  float* qs = shared;      // [dk]
  float* parts = qs + dk;  // [4][2 + dv]
  const std::int64_t row = blockIdx.x / splits, split = blockIdx.x % splits;
  const RowIndex r = row_index(s, row);
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const float* q = at(o.q, s.q_stride, r.b, r.h, r.i);
  for (std::int64_t d = threadIdx.x; d < dk; d += blockDim.x) qs[d] = q[d];
  __syncthreads();
  const std::int64_t j_begin = split * keys_per_split;
  const std::int64_t j_end = min(min(s.kv_len, j_begin + keys_per_split), causal_key_limit(s, r.i));
  OnlineSoftmax state;
  float acc[kDvLanes];
#pragma unroll
  for (int c = 0; c < kDvLanes; ++c) acc[c] = 0.0f;
  for (std::int64_t j = j_begin + warp; j < j_end; j += 4) {
    const float* k = at(o.k, s.k_stride, r.b, r.kv_h, j);
    float part = 0.0f;
    for (std::int64_t d = lane; d < dk; d += 32) part += qs[d] * k[d];
    const float score =
        modified_score(s, s.scale * warp_sum(part), r.b, r.h, r.i, j, o.mask, o.bias);
    float shift;
    const float alpha = state.rescale(score, shift);
    const float p = OnlineSoftmax::p(score, shift);
    state.l += p;
    const float* v = at(o.v, s.v_stride, r.b, r.kv_h, j);
#pragma unroll
    for (int c = 0; c < kDvLanes; ++c) {
      const std::int64_t d = lane + 32 * c;
      if (d < dv) acc[c] = acc[c] * alpha + p * v[d];
    }
  }
  float* mine = parts + warp * (2 + dv);
  if (lane == 0) {
    mine[0] = state.m;
    mine[1] = state.l;
  }
#pragma unroll
  for (int c = 0; c < kDvLanes; ++c) {
    const std::int64_t d = lane + 32 * c;
    if (d < dv) mine[2 + d] = acc[c];
  }
  __syncthreads();
  if (warp != 0) return;
  float m = -INFINITY;
  for (int w = 0; w < 4; ++w) m = fmaxf(m, parts[w * (2 + dv)]);
  float* partial = static_cast<float*>(o.scratch) + (row * splits + split) * (2 + dv);
  float l = 0.0f;
  for (int w = 0; w < 4; ++w) {
    const float mw = parts[w * (2 + dv)];
    l += parts[w * (2 + dv) + 1] * partial_weight(mw, m);
  }
  if (lane == 0) {
    partial[0] = m;
    partial[1] = l;
  }
  for (std::int64_t d = lane; d < dv; d += 32) {
    float sum = 0.0f;
    for (int w = 0; w < 4; ++w)
      sum += parts[w * (2 + dv) + 2 + d] * partial_weight(parts[w * (2 + dv)], m);
    partial[2 + d] = sum;
  }
}

// One warp per row: the splits' partial softmaxes into the output.
__global__ void attention_combine_kernel(AttentionShape s, AttentionOperands o,
                                         std::int64_t splits) {
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * 4 + warp;
  if (row >= s.batch * s.heads * s.q_len) return;
  const std::int64_t dv = s.value_dim;
  const float* partial = static_cast<const float*>(o.scratch) + row * splits * (2 + dv);
  float m = -INFINITY;
  for (std::int64_t p = 0; p < splits; ++p) m = fmaxf(m, partial[p * (2 + dv)]);
  float l = 0.0f;
  for (std::int64_t p = 0; p < splits; ++p)
    l += partial[p * (2 + dv) + 1] * partial_weight(partial[p * (2 + dv)], m);
  const RowIndex r = row_index(s, row);
  float* out = at(o.out, s.out_stride, r.b, r.h, r.i);
  for (std::int64_t d = lane; d < dv; d += 32) {
    float sum = 0.0f;
    for (std::int64_t p = 0; p < splits; ++p)
      sum += partial[p * (2 + dv) + 2 + d] * partial_weight(partial[p * (2 + dv)], m);
    out[d] = m == -INFINITY ? NAN : sum / l;
  }
}

// Calls f(std::integral_constant<int, L>{}) with L = ceil(dv / 32) rounded up to 1, 2, 4 or 8.
template <typename F>
cudaError_t with_dv_lanes(std::int64_t dv, F&& f) {
  if (dv <= 32) return f(std::integral_constant<int, 1>{});
  if (dv <= 64) return f(std::integral_constant<int, 2>{});
  if (dv <= 128) return f(std::integral_constant<int, 4>{});
  if (dv <= 256) return f(std::integral_constant<int, 8>{});
  return cudaErrorInvalidValue;
}

}  // namespace

cudaError_t attention_configure(AttentionKernel kernel, const AttentionShape& shape,
                                const AttentionPlan& plan) {
  if (!plan.takes) return cudaErrorInvalidValue;
  if (kernel != AttentionKernel::kSimtTiled || plan.shared_bytes <= 48 * 1024) return cudaSuccess;
  return with_dv_lanes(shape.value_dim, [&](auto lanes) {
    return cudaFuncSetAttribute(attention_simt_kernel<decltype(lanes)::value>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(plan.shared_bytes));
  });
}

cudaError_t attention(AttentionKernel kernel, const AttentionShape& shape,
                      const AttentionPlan& plan, LowType operand, const AttentionOperands& operands,
                      cudaStream_t stream) {
  if (!plan.takes) return cudaErrorInvalidValue;
  if (plan.blocks == 0) return cudaSuccess;  // no rows
  const auto blocks = static_cast<unsigned>(plan.blocks);
  const auto shared = static_cast<std::size_t>(plan.shared_bytes);
  switch (kernel) {
    case AttentionKernel::kReference:
      attention_reference_kernel<<<blocks, plan.threads, 0, stream>>>(shape, operands);
      return cudaGetLastError();
    case AttentionKernel::kSimtTiled:
      return with_dv_lanes(shape.value_dim, [&](auto lanes) {
        attention_simt_kernel<decltype(lanes)::value>
            <<<blocks, plan.threads, shared, stream>>>(shape, operands);
        return cudaGetLastError();
      });
    case AttentionKernel::kSplitKeys: {
      const cudaError_t e = with_dv_lanes(shape.value_dim, [&](auto lanes) {
        attention_split_kernel<decltype(lanes)::value><<<blocks, plan.threads, shared, stream>>>(
            shape, operands, plan.splits, plan.keys_per_split);
        return cudaGetLastError();
      });
      if (e != cudaSuccess) return e;
      const std::int64_t rows = shape.batch * shape.heads * shape.q_len;
      attention_combine_kernel<<<static_cast<unsigned>((rows + 3) / 4), 128, 0, stream>>>(
          shape, operands, plan.splits);
      return cudaGetLastError();
    }
    case AttentionKernel::kMmaRows16:
    case AttentionKernel::kMmaRows32:
    case AttentionKernel::kMmaRows64: return attention_mma(shape, plan, operand, operands, stream);
    case AttentionKernel::kMmaPipelinedRows64:
    case AttentionKernel::kMmaPipelinedRows128:
      return attention_mma_pipelined(shape, plan, operand, operands, stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
