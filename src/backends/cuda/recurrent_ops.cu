// GRU/LSTM time-step kernels: the gate update after a recurrent GEMM, and a fused
// mat-vec + gates kernel for small batches (one launch per step).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/phase_trace.cuh"
#include "backends/cuda/recurrent_cell.cuh"
#include "backends/cuda/recurrent_trace.h"
#include "backends/cuda/shared_memory_opt_in.cuh"
#include "backends/cuda/tagged_state.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

__device__ __forceinline__ void store_low(void* out, LowType type, std::int64_t i, float v) {
  if (type == LowType::kF16) {
    static_cast<__half*>(out)[i] = __float2half_rn(v);
  } else if (type == LowType::kBF16) {
    static_cast<__nv_bfloat16*>(out)[i] = __float2bfloat16_rn(v);
  } else {
    static_cast<float*>(out)[i] = v;
  }
}

// h_prev: this unit's previous state (the tile kernels have it in shared memory already).
// Returns the new h.
__device__ __forceinline__ float finish_unit(const RecurrentStep& s, int d, std::int64_t b,
                                             std::int64_t j, const float* x, const float* r,
                                             float h_prev) {
  const std::int64_t state = (d * s.batch + b) * s.hidden + j;
  const bool reverse = s.reverse_only || d == 1;
  const std::int64_t t = reverse ? s.seq - 1 - s.step : s.step;
  const float rbn = s.rbn ? s.rbn[d * s.hidden + j] : 0.0f;
  float c_dummy = 0.0f;
  const float h = cell_update(s.gates, x, r, h_prev, s.gates == 4 ? &s.c[state] : &c_dummy, rbn);
  s.h_next[state] = h;
  if (s.y) s.y[((t * s.directions + d) * s.batch + b) * s.hidden + j] = h;
  if (s.h_next_low) store_low(s.h_next_low, s.low_type, state, h);
  return h;
}

__device__ __forceinline__ void load_x(const RecurrentStep& s, int d, std::int64_t b,
                                       std::int64_t j, float* x) {
  const bool reverse = s.reverse_only || d == 1;
  const std::int64_t t = reverse ? s.seq - 1 - s.step : s.step;
  const std::int64_t gh = s.gates * s.hidden;
  const float* row = s.xw + ((t * s.batch + b) * s.directions + d) * gh;
  for (int g = 0; g < s.gates; ++g) x[g] = row[g * s.hidden + j];
}

// grid (ceil(H / block), rows): blockIdx.y walks the D*B (direction, batch) rows, so a thread
// finds its unit without a 64-bit division (which costs ~100 instructions on the GPU).
__global__ void gates_kernel(RecurrentStep s) {
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= s.hidden) return;
  const int rows = s.directions * static_cast<int>(s.batch);
  for (int row = static_cast<int>(blockIdx.y); row < rows; row += static_cast<int>(gridDim.y)) {
    const int d = row / static_cast<int>(s.batch);
    const std::int64_t b = row % static_cast<int>(s.batch);
    float x[4], r[4];
    load_x(s, d, b, j, x);
    const float* hr = s.hr + (d * s.batch + b) * s.gates * s.hidden;
    for (int g = 0; g < s.gates; ++g) r[g] = hr[g * s.hidden + j];
    finish_unit(s, d, b, j, x, r, s.h_prev[(d * s.batch + b) * s.hidden + j]);
  }
}

__device__ __forceinline__ void load4(const float* p, float* v) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x;
  v[1] = q.y;
  v[2] = q.z;
  v[3] = q.w;
}
__device__ __forceinline__ void load4(const __half* p, float* v) {
  const uint2 q = *reinterpret_cast<const uint2*>(p);
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&q.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&q.y));
  v[0] = a.x;
  v[1] = a.y;
  v[2] = b.x;
  v[3] = b.y;
}
__device__ __forceinline__ void load4(const __nv_bfloat16* p, float* v) {
  const uint2 q = *reinterpret_cast<const uint2*>(p);
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&q.y));
  v[0] = a.x;
  v[1] = a.y;
  v[2] = b.x;
  v[3] = b.y;
}

constexpr int kFusedWarps = 8;
constexpr int kBatchTile = 4;

// Sums each acc[g][b] over the warp's lanes; every lane ends with the totals. At batch 1 the
// gates are reduced together (a transposing butterfly): the first two levels exchange half of
// the lane's remaining gates each, so 4 gates cost 2 + 1 + 3 shuffles plus 4 broadcasts instead
// of 4 x 5, the shuffles of 16 warps per SM in every recurrent step being on the critical path.
template <int G, int BT>
__device__ __forceinline__ void reduce_across_warp(float (&acc)[G][BT], int lane) {
  constexpr unsigned kAll = 0xffffffffu;
  if constexpr (BT == 1 && (G == 3 || G == 4)) {
    const float v3 = G == 4 ? acc[G - 1][0] : 0.0f;
    const bool upper16 = (lane & 16) != 0, upper8 = (lane & 8) != 0;
    // Lanes 0-15 keep gates 0 and 1, lanes 16-31 gates 2 and 3.
    float keep0 = upper16 ? acc[2][0] : acc[0][0];
    float keep1 = upper16 ? v3 : acc[1][0];
    keep0 += __shfl_xor_sync(kAll, upper16 ? acc[0][0] : acc[2][0], 16);
    keep1 += __shfl_xor_sync(kAll, upper16 ? acc[1][0] : v3, 16);
    // Then lanes with bit 3 clear keep the first of the two, the others the second: lane group
    // lane / 8 holds gate lane / 8.
    float sum = upper8 ? keep1 : keep0;
    sum += __shfl_xor_sync(kAll, upper8 ? keep0 : keep1, 8);
    sum += __shfl_xor_sync(kAll, sum, 4);
    sum += __shfl_xor_sync(kAll, sum, 2);
    sum += __shfl_xor_sync(kAll, sum, 1);
#pragma unroll
    for (int g = 0; g < G; ++g) acc[g][0] = __shfl_sync(kAll, sum, 8 * g);
  } else {
#pragma unroll
    for (int g = 0; g < G; ++g) {
#pragma unroll
      for (int b = 0; b < BT; ++b) {
        float v = acc[g][b];
        for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(kAll, v, offset);
        acc[g][b] = v;
      }
    }
  }
}

// The mat-vec of one warp's unit for a batch tile: acc[g][b] = R[g][unit] . h_tile[b], each
// lane summing its quarter-rows, then reduced across the warp. rows[g] points at the unit's row
// of gate g (global or shared memory). BT is the batch tile: 1 for a single stream, so the
// batch-1 kernels do not multiply three rows of zeros.
template <typename W, int G, int BT>
__device__ __forceinline__ void unit_matvec(const W* const (&rows)[G], const float* h_tile,
                                            std::int64_t H, int lane, float (&acc)[G][BT]) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int b = 0; b < BT; ++b) acc[g][b] = 0.0f;
  }
  for (std::int64_t k = lane * 4; k < H; k += 128) {
#pragma unroll
    for (int g = 0; g < G; ++g) {
      float w[4];
      load4(rows[g] + k, w);
#pragma unroll
      for (int b = 0; b < BT; ++b) {
        const float4 h = *reinterpret_cast<const float4*>(h_tile + b * H + k);
        acc[g][b] += w[0] * h.x + w[1] * h.y + w[2] * h.z + w[3] * h.w;
      }
    }
  }
  reduce_across_warp<G, BT>(acc, lane);
}

// Register-held gate: with kRegChunks > 0, lane `lane` keeps the elements k = lane * 4 + i * 128
// (i < kRegChunks) of its unit's row of gate `reg_gate` in registers for the whole launch, the
// same elements unit_matvec reads, so that gate is read neither from shared memory nor from L2.
// It covers H <= kRegChunks * 128. A streaming multiprocessor has as many bytes of registers as of
// shared memory, so an FP32 BiLSTM layer (33.5 MB of R) that does not fit in shared memory alone
// (3 of its 4 gates do) fits in both together.
constexpr int kRegisterChunks = 8;  // H <= 1024

template <typename W, int kRegChunks>
__device__ __forceinline__ void load_register_gate(const W* row, std::int64_t H, int lane,
                                                   float (&reg)[kRegChunks][4]) {
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    const std::int64_t k = lane * 4 + i * 128;
    if (row && k < H) {
      load4(row + k, reg[i]);
    } else {
      reg[i][0] = reg[i][1] = reg[i][2] = reg[i][3] = 0.0f;
    }
  }
}

// h_prev rows b0 .. b0 + BT - 1 of direction d into shared memory (zeros past the batch), as
// float4 (H % 4 == 0). kCoherent: read past L1 (__ldcg), for h written by other blocks of the
// same launch.
template <int BT, bool kCoherent>
__device__ __forceinline__ void stage_h(const RecurrentStep& s, int d, std::int64_t b0,
                                        float* h_tile) {
  const std::int64_t H = s.hidden;
#pragma unroll
  for (int b = 0; b < BT; ++b) {
    const bool in_batch = b0 + b < s.batch;
    const float* src = s.h_prev + (d * s.batch + b0 + b) * H;
    for (std::int64_t k = threadIdx.x * 4; k < H; k += blockDim.x * 4) {
      float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
      if (in_batch) {
        const auto* p = reinterpret_cast<const float4*>(src + k);
        v = kCoherent ? __ldcg(p) : *p;
      }
      *reinterpret_cast<float4*>(h_tile + b * H + k) = v;
    }
  }
}

// Lane b < BT loads the input projection of batch row b0 + b for unit j: issued before the
// mat-vec, so its latency hides behind the h staging.
// G: the gates, known at compile time so that x stays in registers (a loop over s.gates indexes
// x at run time, which puts it on the stack).
template <int G, int BT>
__device__ __forceinline__ void prefetch_x(const RecurrentStep& s, int d, std::int64_t b0,
                                           std::int64_t j, int lane, float (&x)[4]) {
  if (lane >= BT || b0 + lane >= s.batch) return;
  const bool reverse = s.reverse_only || d == 1;
  const std::int64_t t = reverse ? s.seq - 1 - s.step : s.step;
  const float* row = s.xw + ((t * s.batch + b0 + lane) * s.directions + d) * G * s.hidden;
#pragma unroll
  for (int g = 0; g < G; ++g) x[g] = row[g * s.hidden + j];
}

// Lane b finishes batch row b0 + b of the warp's unit j (x: what prefetch_x loaded).
template <int G, int BT>
__device__ __forceinline__ void finish_tile(const RecurrentStep& s, int d, std::int64_t b0,
                                            std::int64_t j, int lane, const float (&acc)[G][BT],
                                            const float (&x)[4], const float* h_tile) {
#pragma unroll
  for (int b = 0; b < BT; ++b) {
    if (lane == b && b0 + b < s.batch) {
      float rr[4];
#pragma unroll
      for (int g = 0; g < G; ++g) rr[g] = acc[g][b];
      finish_unit(s, d, b0 + b, j, x, rr, h_tile[b * s.hidden + j]);
    }
  }
}

// stage_h for the tagged exchange: rows b0 .. b0 + BT - 1 of direction d from `tagged`
// ([D][B][H] words), waiting for each pair of elements until it carries `tag`. All of a
// thread's loads are issued before the first wait (H <= blockDim.x * 2 * kPairs = 1024 per pass).
template <int BT>
__device__ __forceinline__ void stage_h_tagged(const RecurrentStep& s, int d, std::int64_t b0,
                                               const unsigned long long* tagged, unsigned tag,
                                               float* h_tile) {
  constexpr int kPairs = 2;
  const std::int64_t H = s.hidden;
  const std::int64_t stride = static_cast<std::int64_t>(blockDim.x) * 2;
#pragma unroll
  for (int b = 0; b < BT; ++b) {
    const bool in_batch = b0 + b < s.batch;
    const unsigned long long* src = tagged + (d * s.batch + b0 + b) * H;
    float* dst = h_tile + b * H;
    for (std::int64_t k0 = threadIdx.x * 2; k0 < H; k0 += stride * kPairs) {
      ulonglong2 v[kPairs];
#pragma unroll
      for (int i = 0; i < kPairs; ++i) {
        const std::int64_t k = k0 + i * stride;
        if (in_batch && k < H) v[i] = load_tagged_pair(src + k);
      }
#pragma unroll
      for (int i = 0; i < kPairs; ++i) {
        const std::int64_t k = k0 + i * stride;
        if (k >= H) continue;
        if (!in_batch) {
          dst[k] = dst[k + 1] = 0.0f;
          continue;
        }
        while (!pair_has_tag(v[i], tag)) v[i] = load_tagged_pair(src + k);
        dst[k] = __uint_as_float(static_cast<unsigned>(v[i].x));
        dst[k + 1] = __uint_as_float(static_cast<unsigned>(v[i].y));
      }
    }
  }
}

// grid (ceil(H / warps), D, ceil(B / BT)); h_prev of the tile is staged in shared memory.
// Needs H % 4 == 0 (16-byte/8-byte vector loads of R rows).
template <typename W, int G, int BT>
__global__ void __launch_bounds__(kFusedWarps * 32)
    fused_kernel(RecurrentStep s, const W* __restrict__ r) {
  extern __shared__ __align__(16) float h_tile[];  // [BT][H]
  const int d = blockIdx.y;
  const std::int64_t b0 = static_cast<std::int64_t>(blockIdx.z) * BT;
  const std::int64_t H = s.hidden;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kFusedWarps + warp;
  float x[4] = {0.f, 0.f, 0.f, 0.f};
  if (j < H) prefetch_x<G, BT>(s, d, b0, j, lane, x);
  stage_h<BT, false>(s, d, b0, h_tile);
  __syncthreads();
  if (j >= H) return;
  const W* unit_rows = r + (static_cast<std::int64_t>(d) * G * H + j) * H;
  const W* rows[G];
#pragma unroll
  for (int g = 0; g < G; ++g) rows[g] = unit_rows + g * H * H;
  float acc[G][BT];
  unit_matvec<W, G, BT>(rows, h_tile, H, lane, acc);
  finish_tile<G, BT>(s, d, b0, j, lane, acc, x, h_tile);
}

template <typename W, int G, int BT>
void launch_fused_typed(const RecurrentStep& s, const W* r, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((s.hidden + kFusedWarps - 1) / kFusedWarps),
                  static_cast<unsigned>(s.directions),
                  static_cast<unsigned>((s.batch + BT - 1) / BT));
  const std::size_t shared = static_cast<std::size_t>(BT * s.hidden) * sizeof(float);
  fused_kernel<W, G, BT><<<grid, kFusedWarps * 32, shared, stream>>>(s, r);
}

template <typename W>
cudaError_t launch_fused(const RecurrentStep& s, const W* r, cudaStream_t stream) {
  if (s.gates == 3) {
    s.batch == 1 ? launch_fused_typed<W, 3, 1>(s, r, stream)
                 : launch_fused_typed<W, 3, kBatchTile>(s, r, stream);
  } else {
    s.batch == 1 ? launch_fused_typed<W, 4, 1>(s, r, stream)
                 : launch_fused_typed<W, 4, kBatchTile>(s, r, stream);
  }
  return cudaGetLastError();
}

// Persistent tactic: the fused kernel's work for every time step in one launch. Between steps
// the blocks of each (direction, batch tile) meet at their group's barrier (all blocks are
// resident: the launch is cooperative), so a step costs its mat-vec and a barrier instead of a
// kernel launch; h_prev is read past L1 (__ldcg), since other blocks wrote it in the step before.

// Per-launch settings of persistent_kernel that are not template parameters.
struct PersistentOptions {
  int resident_gates = 0;
  // VOXRT_CUDA_RECURRENT_TRACE: kTracePhases clock64 sums per block (recurrent_trace.h).
  unsigned long long* trace = nullptr;
};
// The phases of a step that the trace (recurrent_trace.h) times, as thread 0 sees them.
const TracePhaseNames kPersistentPhases = {
    "persistent",
    {"stage own h words", "wait for block (syncthreads)", "mat-vec + warp reduce",
     "gates + publish", "barrier (untagged)"}};

// The warp's mat-vec in the persistent kernel: acc[g][b] = R[g][unit] . h_tile[b], reduced over
// the warp. Gate g's row is in shared memory for g < resident_gates (resident + (g * kWarps +
// warp) * H: derived from the shared array right here, so the compiler emits shared-memory loads,
// not generic ones), in registers for g == resident_gates with kRegGate, else read from global
// memory (unit_rows + g * H * H).
// kChunks > 0 (H <= 128 * kChunks): the lane's h elements are loaded into registers once and the
// gates are the outer loop, so the shared/register/global choice is one uniform branch per gate
// and each branch issues all of its kChunks loads back to back; kChunks == 0: any H, through
// unit_matvec with generic row pointers (FP16/BF16 weights and batch tiles).
template <typename W, int G, int BT, int kChunks, bool kRegGate, int kWarps>
__device__ __forceinline__ void persistent_matvec(const W* resident, const W* unit_rows,
                                                  int resident_gates,
                                                  const float (&reg)[kChunks > 0 ? kChunks : 1][4],
                                                  const float* h_tile, std::int64_t H, int warp,
                                                  int lane, float (&acc)[G][BT]) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int b = 0; b < BT; ++b) acc[g][b] = 0.0f;
  }
  const auto dot = [&](int g, const float(&w)[4], const float4(&h)[BT]) {
#pragma unroll
    for (int b = 0; b < BT; ++b)
      acc[g][b] += w[0] * h[b].x + w[1] * h[b].y + w[2] * h[b].z + w[3] * h[b].w;
  };
  if constexpr (kChunks > 0) {
    float4 h[kChunks][BT];
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      const std::int64_t k = lane * 4 + i * 128;
#pragma unroll
      for (int b = 0; b < BT; ++b) {
        h[i][b] = k < H ? *reinterpret_cast<const float4*>(h_tile + b * H + k)
                        : make_float4(0.f, 0.f, 0.f, 0.f);
      }
    }
    const auto row_times_h = [&](int g, const W* row) {
#pragma unroll
      for (int i = 0; i < kChunks; ++i) {
        const std::int64_t k = lane * 4 + i * 128;
        float w[4];
        if (k < H) {
          load4(row + k, w);
          dot(g, w, h[i]);
        }
      }
    };
#pragma unroll
    for (int g = 0; g < G; ++g) {
      if (g < resident_gates) {
        row_times_h(g, resident + (static_cast<std::int64_t>(g) * kWarps + warp) * H);
      } else if (kRegGate && g == resident_gates) {
#pragma unroll
        for (int i = 0; i < kChunks; ++i) dot(g, reg[i], h[i]);  // zeros past H
      } else {
        row_times_h(g, unit_rows + g * H * H);
      }
    }
  } else {
    // The rows as generic pointers, as the fused kernel reads them: for FP16/BF16 weights (bound
    // by the half -> float conversions) this measured faster than any per-gate branching.
    const W* rows[G];
#pragma unroll
    for (int g = 0; g < G; ++g) {
      rows[g] = g < resident_gates ? resident + (static_cast<std::int64_t>(g) * kWarps + warp) * H
                                   : unit_rows + g * H * H;
    }
    unit_matvec<W, G, BT>(rows, h_tile, H, lane, acc);
    return;  // unit_matvec reduced across the warp
  }
  reduce_across_warp<G, BT>(acc, lane);
}

// The persistent kernel's prologue: the block's resident rows ([gate][warp][H]) into shared
// memory. With 16-byte rows every thread issues all of its 16-byte cp.async copies before waiting
// once; an element per thread and dependent load took ~100 us a launch (FP32 BiLSTM layer, 192 KB
// a block), a third of the recurrence itself. Rows of units past H are zeros.
template <typename W, int G, int kWarps>
__device__ __forceinline__ void copy_resident_rows(const W* r, int d, std::int64_t H,
                                                   std::int64_t j0, int resident_gates,
                                                   W* resident) {
  const std::int64_t rows = static_cast<std::int64_t>(resident_gates) * kWarps;
  const auto source_row = [&](std::int64_t row) {
    return r + ((static_cast<std::int64_t>(d) * G + row / kWarps) * H + j0 + row % kWarps) * H;
  };
  if ((H * static_cast<std::int64_t>(sizeof(W))) % 16 != 0) {
    for (std::int64_t row = 0; row < rows; ++row) {
      const bool in_layer = j0 + row % kWarps < H;
      W* dst = resident + row * H;
      for (std::int64_t k = threadIdx.x; k < H; k += blockDim.x)
        dst[k] = in_layer ? source_row(row)[k] : W{};
    }
    return;
  }
  const unsigned per_row = static_cast<unsigned>(H * sizeof(W) / 16);
  const unsigned total = static_cast<unsigned>(rows) * per_row;
  for (unsigned i = threadIdx.x; i < total; i += blockDim.x) {
    const unsigned row = i / per_row, piece = i % per_row;
    auto* dst = reinterpret_cast<uint4*>(resident + row * H) + piece;
    if (j0 + row % kWarps < H) {
      const auto* src = reinterpret_cast<const uint4*>(source_row(row)) + piece;
      const auto shared = static_cast<unsigned>(__cvta_generic_to_shared(dst));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(shared), "l"(src) : "memory");
    } else {
      *dst = make_uint4(0u, 0u, 0u, 0u);
    }
  }
  asm volatile("cp.async.wait_all;" ::: "memory");
}

// The first `resident_gates` gates of the block's units live in shared memory after h_tile
// (copied once, [gate][warp][H]), so a step reads them from there and streams only the other
// gates and h from L2. All G gates fit when the weights are FP16/BF16 at H = 1024 (16.8 MB over
// 132 SMs); FP32 at that size keeps three of an LSTM's four.
// kRegGate: gate `resident_gates` (the first one not in shared memory) is held in registers
// (kChunks of them a lane). kWarps: units (one per warp) of a block; with 8 two blocks share an SM,
// with 16 one block has the SM, so each SM stages h once per step, not twice, and half as many
// blocks wait for each other (FP16 BiLSTM step 3.56 -> 3.13 us on an H100).
// With the tagged exchange h_tile has two buffers (step t reads t % 2), so a block needs one
// __syncthreads per step: a warp staging step t + 1's h into the buffer step t - 1 read has passed
// step t's __syncthreads, which every warp reached after its step t - 1 mat-vec.
// The lane that owns a (unit, batch row) keeps its LSTM cell state in a register and walks
// pointers to its x and y rows; the gate update uses the fast activations (cell_update<true>).
template <typename W, int G, int BT, int kChunks, bool kRegGate, int kWarps>
__global__ void __launch_bounds__(kWarps * 32, (kRegGate && kWarps == 8) ? 2 : 1)
    persistent_kernel(RecurrentStep s, const W* __restrict__ r, float* h0, float* h1,
                      GridBarrier* barrier, unsigned long long* tagged, PersistentOptions options) {
  // [1 or 2][BT][H], then W [resident_gates][kWarps][H]
  extern __shared__ __align__(16) float h_tiles[];
  const int resident_gates = options.resident_gates;
  const int d = blockIdx.y;
  unsigned* arrived = &barrier[blockIdx.y * gridDim.z + blockIdx.z].arrived;
  const std::int64_t b0 = static_cast<std::int64_t>(blockIdx.z) * BT;
  const std::int64_t H = s.hidden;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * kWarps;
  const std::int64_t j = j0 + warp;
  const bool active = j < H;  // no early return: every thread meets every barrier
  const int tile_buffers = tagged ? 2 : 1;
  W* resident = reinterpret_cast<W*>(h_tiles + tile_buffers * BT * H);
  copy_resident_rows<W, G, kWarps>(r, d, H, j0, resident_gates, resident);
  const W* unit_rows = r + (static_cast<std::int64_t>(d) * G * H + (active ? j : 0)) * H;
  constexpr int kRegArray = kChunks > 0 ? kChunks : 1;
  float reg[kRegArray][4] = {};
  if constexpr (kRegGate) {
    load_register_gate<W, kRegArray>(
        active && resident_gates < G ? unit_rows + resident_gates * H * H : nullptr, H, lane, reg);
  }
  // Lane b < BT owns batch row b0 + b of unit j: its cell state (LSTM), its x and y rows (moved
  // by one time step per step, backwards for the reverse direction) and its publication.
  const bool owner = active && lane < BT && b0 + lane < s.batch;
  const std::int64_t b = b0 + (owner ? lane : 0);
  const std::int64_t owned_state = (d * s.batch + b) * H + j;
  const bool reverse = s.reverse_only || d == 1;
  const std::int64_t t_first = reverse ? s.seq - 1 : 0;
  const std::int64_t x_step = (reverse ? -1 : 1) * s.batch * s.directions * G * H;
  const std::int64_t y_step = (reverse ? -1 : 1) * s.directions * s.batch * H;
  const float* x_row = s.xw + ((t_first * s.batch + b) * s.directions + d) * G * H + j;
  float* y_row = s.y ? s.y + t_first * s.directions * s.batch * H + owned_state : nullptr;
  const float rbn = G == 3 && s.rbn && owner ? s.rbn[d * H + j] : 0.0f;
  float c_held = owner && G == 4 ? s.c[owned_state] : 0.0f;
  // Tagged exchange: buffer t % 2 holds the h that step t reads, tagged t + 1; the initial
  // state (tag 1) is published by the warps that own its units, as their later steps will be.
  const std::int64_t words = static_cast<std::int64_t>(s.directions) * s.batch * H;
  if (tagged && owner) store_tagged(tagged + owned_state, h0[owned_state], 1u);
  PhaseTrace trace_phases(options.trace);
  for (std::int64_t t = 0; t < s.seq; ++t) {
    const unsigned tag = static_cast<unsigned>(t) + 1u;
    float* h_tile = h_tiles + (t % tile_buffers) * BT * H;
    float x[4] = {0.f, 0.f, 0.f, 0.f};
    if (owner) {
#pragma unroll
      for (int g = 0; g < G; ++g) x[g] = x_row[g * H];
    }
    if (tagged) {
      stage_h_tagged<BT>(s, d, b0, tagged + (t % 2) * words, tag, h_tile);
    } else {
      s.h_prev = t % 2 == 0 ? h0 : h1;
      stage_h<BT, true>(s, d, b0, h_tile);
    }
    trace_phases.lap(0);
    __syncthreads();  // also orders the resident copy before the first step's reads
    trace_phases.lap(1);
    if (active) {
      float acc[G][BT];
      persistent_matvec<W, G, BT, kChunks, kRegGate, kWarps>(resident, unit_rows, resident_gates,
                                                             reg, h_tile, H, warp, lane, acc);
      trace_phases.lap(2);
      const bool last = t + 1 == s.seq;
#pragma unroll
      for (int bb = 0; bb < BT; ++bb) {
        if (lane == bb && owner) {
          float rr[4];
#pragma unroll
          for (int g = 0; g < G; ++g) rr[g] = acc[g][bb];
          const float h = cell_update<true>(G, x, rr, h_tile[bb * H + j], &c_held, rbn);
          if (y_row) *y_row = h;
          if (tagged && !last) {
            store_tagged(tagged + ((t + 1) % 2) * words + owned_state, h, tag + 1u);
          } else {
            (t % 2 == 0 ? h1 : h0)[owned_state] = h;
          }
        }
      }
      trace_phases.lap(3);
    }
    x_row += x_step;
    if (y_row) y_row += y_step;
    // The last step needs no barrier: the launch's end orders it before what reads h. With the
    // tagged exchange the next step's loads wait for their data, and h_tile's other buffer is
    // free (above). Buffer (t + 1) % 2 of the tagged words is free to overwrite: its readers
    // (step t - 1) are done, since this block has seen every unit of step t - 1's output, which
    // each writer produced after its own reads.
    if (!tagged && t + 1 < s.seq) group_barrier(arrived, static_cast<unsigned>(t + 1) * gridDim.x);
    trace_phases.lap(4);
  }
  if (owner && G == 4) s.c[owned_state] = c_held;
  trace_phases.finish((blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::atoi(v) : fallback;
}

// VOXRT_CUDA_RESIDENT_GATES=N caps the gates kept in shared memory (tests use it to run the
// partly resident and the streaming paths at small sizes); unset: as many as fit.
int resident_gates_cap(int gates) {
  const int n = env_int("VOXRT_CUDA_RESIDENT_GATES", gates);
  return n < 0 ? 0 : n > gates ? gates : n;
}

// VOXRT_CUDA_REGISTER_GATE=0 turns the register-held gate off (tests run both paths).
bool register_gate_allowed() {
  return env_int("VOXRT_CUDA_REGISTER_GATE", 1) != 0;
}

// VOXRT_CUDA_TAGGED_STATE=0: the blocks meet at the arrival counters between steps instead of
// waiting on the tagged state words (kept to compare the two and as a fallback).
bool tagged_state_allowed() {
  return env_int("VOXRT_CUDA_TAGGED_STATE", 1) != 0;
}

// Units per block of the batch-1 persistent kernel: 16 when blocks of 8 would outnumber the SMs
// (two would share one, each staging h and waiting on its own), else 8, which spreads a small
// layer over more SMs. VOXRT_CUDA_PERSISTENT_WARPS=8 or 16 forces it. Batch tiles always use 8:
// their kernel needs ~128 registers a thread already.
int persistent_warps(const RecurrentStep& s) {
  if (s.batch != 1) return 8;
  const int forced = env_int("VOXRT_CUDA_PERSISTENT_WARPS", 0);
  if (forced == 8 || forced == 16) return forced;
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess)
    return 8;
  return (s.hidden + 7) / 8 * s.directions > sms ? 16 : 8;
}

// Above 48 KiB of shared memory a kernel must opt in; once per kernel and process, on the first
// (eager) launch, so never inside a graph capture.
template <typename W, int G, int BT, int kChunks, bool kRegGate, int kWarps>
cudaError_t opt_in_shared_memory() {
  static const cudaError_t opted_in = allow_max_dynamic_shared_memory(
      reinterpret_cast<const void*>(persistent_kernel<W, G, BT, kChunks, kRegGate, kWarps>));
  return opted_in;
}

template <typename W, int G, int BT, int kWarps>
cudaError_t launch_persistent_typed(const RecurrentStep& s, const W* r, float* h0, float* h1,
                                    GridBarrier* barrier, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((s.hidden + kWarps - 1) / kWarps),
                  static_cast<unsigned>(s.directions),
                  static_cast<unsigned>((s.batch + BT - 1) / BT));
  constexpr int kThreads = kWarps * 32;
  const long long blocks = static_cast<long long>(grid.x) * grid.y * grid.z;
  const bool use_tags = tagged_state_allowed();
  const std::size_t h_bytes =
      static_cast<std::size_t>((use_tags ? 2 : 1) * BT * s.hidden) * sizeof(float);
  const std::size_t gate_bytes =
      static_cast<std::size_t>(kWarps) * static_cast<std::size_t>(s.hidden) * sizeof(W);
  // At batch 1 with H <= 1024 the kernels hold the lane's h elements in registers (kChunks).
  // The register-held gate at batch 1 only: with a batch tile of 4 the kernel already needs
  // ~128 registers and the 32 more spilled (ptxas -v), which costs more than the gate saves.
  const void* streaming = nullptr;
  const void* with_register_gate = nullptr;
  cudaError_t e = cudaSuccess;
  if constexpr (BT == 1) {
    constexpr int kChunks = kRegisterChunks;
    if (s.hidden <= kChunks * 128) {
      // FP16/BF16 weights keep the chunk-outer loop when all gates are resident: their mat-vec
      // is bound by the half -> float conversions, and the gate-outer order measured slower
      // (FP16 BiLSTM on an H100: 2.07 against 1.79 us a step).
      if constexpr (std::is_same_v<W, float>) {
        streaming =
            reinterpret_cast<const void*>(persistent_kernel<W, G, BT, kChunks, false, kWarps>);
        e = opt_in_shared_memory<W, G, BT, kChunks, false, kWarps>();
        if (e != cudaSuccess) return e;
      }
      with_register_gate =
          reinterpret_cast<const void*>(persistent_kernel<W, G, BT, kChunks, true, kWarps>);
      e = opt_in_shared_memory<W, G, BT, kChunks, true, kWarps>();
      if (e != cudaSuccess) return e;
    }
  }
  if (!streaming) {
    streaming = reinterpret_cast<const void*>(persistent_kernel<W, G, BT, 0, false, kWarps>);
    e = opt_in_shared_memory<W, G, BT, 0, false, kWarps>();
    if (e != cudaSuccess) return e;
  }
  const bool register_gate = with_register_gate && register_gate_allowed();
  // Every block must be resident at once (they wait for each other): as many gates in shared
  // memory as still let the whole grid fit, down to none (all streamed from L2 every step), and
  // below all of them the next gate in registers when the grid still fits with the register
  // kernel. The launch is cooperative, which the driver refuses rather than deadlocks when it
  // would not fit.
  PersistentOptions options;
  options.resident_gates = resident_gates_cap(G);
  std::size_t shared = 0;
  const void* kernel = nullptr;
  for (;; --options.resident_gates) {
    shared = h_bytes + static_cast<std::size_t>(options.resident_gates) * gate_bytes;
    long long fit = 0;
    if (register_gate && options.resident_gates < G) {
      e = resident_blocks(with_register_gate, kThreads, shared, &fit);
      if (e != cudaSuccess) return e;
      if (blocks <= fit) {
        kernel = with_register_gate;
        break;
      }
    }
    e = resident_blocks(streaming, kThreads, shared, &fit);
    if (e != cudaSuccess) return e;
    if (blocks <= fit) {
      kernel = streaming;
      break;
    }
    if (options.resident_gates == 0) return cudaErrorCooperativeLaunchTooLarge;
  }
  options.trace = recurrent_trace_buffer(blocks, s.seq, kWarps, kPersistentPhases);
  // One memset clears the counters and both tagged buffers (a tag left by the previous launch
  // would otherwise be taken for this one's).
  e = cudaMemsetAsync(barrier, 0,
                      use_tags ? grid_barrier_bytes(s.directions, s.batch, s.hidden)
                               : sizeof(GridBarrier) * grid.y * grid.z,
                      stream);
  if (e != cudaSuccess) return e;
  RecurrentStep step = s;
  const W* weights = r;
  unsigned long long* tagged =
      use_tags ? tagged_state_words(barrier, s.directions, s.batch) : nullptr;
  void* args[] = {&step, &weights, &h0, &h1, &barrier, &tagged, &options};
  return cudaLaunchCooperativeKernel(kernel, grid, dim3(kThreads), args, shared, stream);
}

// The K-split kernel (recurrent_ksplit.cu) for this layer: VOXRT_CUDA_PERSISTENT_KSPLIT=0 never,
// =1 wherever it applies, unset from H = 512 (measured on the BiLSTM's H = 1024).
// Not with the settings the tests use to force persistent_kernel's other paths (fewer resident
// gates, no register gate, the arrival-counter exchange).
bool ksplit_wanted(const RecurrentStep& s, LowType r_type) {
  const int setting = env_int("VOXRT_CUDA_PERSISTENT_KSPLIT", -1);
  if (setting == 0 || !ksplit_applies(s, r_type)) return false;
  if (resident_gates_cap(s.gates) < s.gates || !register_gate_allowed() || !tagged_state_allowed())
    return false;
  return setting == 1 || s.hidden >= 512;
}

template <typename W>
cudaError_t launch_persistent(const RecurrentStep& s, const W* r, float* h0, float* h1,
                              GridBarrier* barrier, cudaStream_t stream) {
  constexpr LowType r_type = std::is_same_v<W, float>    ? LowType::kF32
                             : std::is_same_v<W, __half> ? LowType::kF16
                                                         : LowType::kBF16;
  if (ksplit_wanted(s, r_type)) {
    const cudaError_t e = recurrent_persistent_ksplit(s, r, r_type, h0, h1, barrier, stream);
    if (e != cudaErrorNotSupported) return e;  // else persistent_kernel below
  }
  if (s.batch == 1) {
    if (persistent_warps(s) == 16) {
      return s.gates == 3 ? launch_persistent_typed<W, 3, 1, 16>(s, r, h0, h1, barrier, stream)
                          : launch_persistent_typed<W, 4, 1, 16>(s, r, h0, h1, barrier, stream);
    }
    return s.gates == 3 ? launch_persistent_typed<W, 3, 1, 8>(s, r, h0, h1, barrier, stream)
                        : launch_persistent_typed<W, 4, 1, 8>(s, r, h0, h1, barrier, stream);
  }
  return s.gates == 3 ? launch_persistent_typed<W, 3, kBatchTile, 8>(s, r, h0, h1, barrier, stream)
                      : launch_persistent_typed<W, 4, kBatchTile, 8>(s, r, h0, h1, barrier, stream);
}

}  // namespace

cudaError_t recurrent_persistent(const RecurrentStep& step, const void* r, LowType r_type,
                                 float* h0, float* h1, GridBarrier* barrier, cudaStream_t stream) {
  if (step.hidden % 4 != 0 || step.hidden * kBatchTile * 4 > 48 * 1024 ||
      (step.gates != 3 && step.gates != 4))
    return cudaErrorInvalidValue;
  if (step.batch <= 0 || step.seq <= 0) return cudaSuccess;
  switch (r_type) {
    case LowType::kF32:
      return launch_persistent(step, static_cast<const float*>(r), h0, h1, barrier, stream);
    case LowType::kF16:
      return launch_persistent(step, static_cast<const __half*>(r), h0, h1, barrier, stream);
    case LowType::kBF16:
      return launch_persistent(step, static_cast<const __nv_bfloat16*>(r), h0, h1, barrier, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t recurrent_gates(const RecurrentStep& step, cudaStream_t stream) {
  const std::int64_t rows = step.directions * step.batch;
  if (rows <= 0 || step.hidden <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((step.hidden + 255) / 256),
                  static_cast<unsigned>(std::min<std::int64_t>(rows, 65535)));
  gates_kernel<<<grid, 256, 0, stream>>>(step);
  return cudaGetLastError();
}

cudaError_t recurrent_fused(const RecurrentStep& step, const void* r, LowType r_type,
                            cudaStream_t stream) {
  // 48 KiB of shared memory without opting in: kBatchTile * H floats.
  if (step.hidden % 4 != 0 || step.hidden * kBatchTile * 4 > 48 * 1024 ||
      (step.gates != 3 && step.gates != 4))
    return cudaErrorInvalidValue;
  if (step.batch <= 0) return cudaSuccess;
  switch (r_type) {
    case LowType::kF32: return launch_fused(step, static_cast<const float*>(r), stream);
    case LowType::kF16: return launch_fused(step, static_cast<const __half*>(r), stream);
    case LowType::kBF16: return launch_fused(step, static_cast<const __nv_bfloat16*>(r), stream);
  }
  return cudaErrorInvalidValue;
}

}  // namespace voxrt::backends::cuda::ops
