// GRU/LSTM time-step kernels: the gate update after a recurrent GEMM, and a fused
// mat-vec + gates kernel for small batches (one launch per step).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/recurrent_cell.cuh"
#include "backends/cuda/shared_memory_opt_in.cuh"

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
        const float* h = h_tile + b * H + k;
        acc[g][b] += w[0] * h[0] + w[1] * h[1] + w[2] * h[2] + w[3] * h[3];
      }
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int b = 0; b < BT; ++b) {
      float v = acc[g][b];
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
      acc[g][b] = v;
    }
  }
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

// unit_matvec with gate `reg_gate` taken from `reg` (rows[reg_gate] is not read); H <= 128 *
// kRegChunks.
template <typename W, int G, int BT, int kRegChunks>
__device__ __forceinline__ void unit_matvec_register(const W* const (&rows)[G], int reg_gate,
                                                     const float (&reg)[kRegChunks][4],
                                                     const float* h_tile, std::int64_t H, int lane,
                                                     float (&acc)[G][BT]) {
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int b = 0; b < BT; ++b) acc[g][b] = 0.0f;
  }
#pragma unroll
  for (int i = 0; i < kRegChunks; ++i) {
    const std::int64_t k = lane * 4 + i * 128;
    if (k < H) {
#pragma unroll
      for (int g = 0; g < G; ++g) {
        float w[4];
        if (g == reg_gate) {
          w[0] = reg[i][0];
          w[1] = reg[i][1];
          w[2] = reg[i][2];
          w[3] = reg[i][3];
        } else {
          load4(rows[g] + k, w);
        }
#pragma unroll
        for (int b = 0; b < BT; ++b) {
          const float* h = h_tile + b * H + k;
          acc[g][b] += w[0] * h[0] + w[1] * h[1] + w[2] * h[2] + w[3] * h[3];
        }
      }
    }
  }
#pragma unroll
  for (int g = 0; g < G; ++g) {
#pragma unroll
    for (int b = 0; b < BT; ++b) {
      float v = acc[g][b];
      for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
      acc[g][b] = v;
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
template <int BT>
__device__ __forceinline__ void prefetch_x(const RecurrentStep& s, int d, std::int64_t b0,
                                           std::int64_t j, int lane, float (&x)[4]) {
  if (lane < BT && b0 + lane < s.batch) load_x(s, d, b0 + lane, j, x);
}

// Tagged state exchange of the persistent tactic: each element of h is one 8-byte word, the value
// in the low half and the number of the step that wrote it in the high half, stored and loaded
// as single morally strong (relaxed, GPU-scope) accesses. A reader that sees the tag it expects
// has the value of that step, with no fence, no arrival counter and no second round trip through
// L2 to learn that the writers are done: the data is its own flag.
__device__ __forceinline__ void store_tagged(unsigned long long* p, float h, unsigned tag) {
  const unsigned long long word = (static_cast<unsigned long long>(tag) << 32) | __float_as_uint(h);
  asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(p), "l"(word) : "memory");
}
__device__ __forceinline__ ulonglong2 load_tagged_pair(const unsigned long long* p) {
  ulonglong2 v;
  asm volatile("ld.relaxed.gpu.global.v2.u64 {%0, %1}, [%2];"
               : "=l"(v.x), "=l"(v.y)
               : "l"(p)
               : "memory");
  return v;
}
__device__ __forceinline__ bool pair_has_tag(const ulonglong2& v, unsigned tag) {
  return static_cast<unsigned>(v.x >> 32) == tag && static_cast<unsigned>(v.y >> 32) == tag;
}

// Lane b finishes batch row b0 + b of the warp's unit j (x: what prefetch_x loaded). With
// `tagged_next`, the new h also goes there ([D][B][H] words) with tag `tag`.
template <int G, int BT>
__device__ __forceinline__ void finish_tile(const RecurrentStep& s, int d, std::int64_t b0,
                                            std::int64_t j, int lane, const float (&acc)[G][BT],
                                            const float (&x)[4], const float* h_tile,
                                            unsigned long long* tagged_next = nullptr,
                                            unsigned tag = 0) {
#pragma unroll
  for (int b = 0; b < BT; ++b) {
    if (lane == b && b0 + b < s.batch) {
      float rr[4];
#pragma unroll
      for (int g = 0; g < G; ++g) rr[g] = acc[g][b];
      const float h = finish_unit(s, d, b0 + b, j, x, rr, h_tile[b * s.hidden + j]);
      if (tagged_next) store_tagged(tagged_next + (d * s.batch + b0 + b) * s.hidden + j, h, tag);
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
  extern __shared__ float h_tile[];  // [BT][H]
  const int d = blockIdx.y;
  const std::int64_t b0 = static_cast<std::int64_t>(blockIdx.z) * BT;
  const std::int64_t H = s.hidden;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t j = static_cast<std::int64_t>(blockIdx.x) * kFusedWarps + warp;
  float x[4] = {0.f, 0.f, 0.f, 0.f};
  if (j < H) prefetch_x<BT>(s, d, b0, j, lane, x);
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

// The first `resident_gates` gates of the block's units live in shared memory after h_tile
// (copied once, [gate][warp][H]), so a step reads them from there and streams only the other
// gates and h from L2. All G gates fit when the weights are FP16/BF16 at H = 1024 (16.8 MB over
// 132 SMs); FP32 at that size keeps three of an LSTM's four.
// kRegChunks > 0: gate `resident_gates` (the first one not in shared memory) is held in
// registers (unit_matvec_register); two blocks per SM are then asked of the register allocator.
template <typename W, int G, int BT, int kRegChunks>
__global__ void __launch_bounds__(kFusedWarps * 32, kRegChunks > 0 ? 2 : 1)
    persistent_kernel(RecurrentStep s, const W* __restrict__ r, float* h0, float* h1,
                      GridBarrier* barrier, unsigned long long* tagged, int resident_gates) {
  extern __shared__ float h_tile[];  // [BT][H], then W [resident_gates][kFusedWarps][H]
  const int d = blockIdx.y;
  unsigned* arrived = &barrier[blockIdx.y * gridDim.z + blockIdx.z].arrived;
  const std::int64_t b0 = static_cast<std::int64_t>(blockIdx.z) * BT;
  const std::int64_t H = s.hidden;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * kFusedWarps;
  const std::int64_t j = j0 + warp;
  const bool active = j < H;  // no early return: every thread meets every barrier
  W* resident = reinterpret_cast<W*>(h_tile + BT * H);
  for (int row = 0; row < resident_gates * kFusedWarps; ++row) {
    const std::int64_t unit = j0 + row % kFusedWarps;
    const W* src = r + ((static_cast<std::int64_t>(d) * G + row / kFusedWarps) * H + unit) * H;
    W* dst = resident + static_cast<std::int64_t>(row) * H;
    for (std::int64_t k = threadIdx.x; k < H; k += blockDim.x) dst[k] = unit < H ? src[k] : W{};
  }
  const W* unit_rows = r + (static_cast<std::int64_t>(d) * G * H + (active ? j : 0)) * H;
  const W* rows[G];
#pragma unroll
  for (int g = 0; g < G; ++g) {
    rows[g] = g < resident_gates
                  ? resident + (static_cast<std::int64_t>(g) * kFusedWarps + warp) * H
                  : unit_rows + g * H * H;
  }
  constexpr int kRegArray = kRegChunks > 0 ? kRegChunks : 1;
  [[maybe_unused]] float reg[kRegArray][4];
  if constexpr (kRegChunks > 0) {
    load_register_gate<W, kRegArray>(
        active && resident_gates < G ? unit_rows + resident_gates * H * H : nullptr, H, lane, reg);
  }
  // Tagged exchange: buffer t % 2 holds the h that step t reads, tagged t + 1; the initial
  // state (tag 1) is published by the warps that own its units, as their later steps will be.
  const std::int64_t words = static_cast<std::int64_t>(s.directions) * s.batch * H;
  if (tagged && active && lane < BT && b0 + lane < s.batch) {
    const std::int64_t state = (d * s.batch + b0 + lane) * H + j;
    store_tagged(tagged + state, h0[state], 1u);
  }
  for (std::int64_t t = 0; t < s.seq; ++t) {
    s.step = static_cast<int>(t);
    s.h_prev = t % 2 == 0 ? h0 : h1;
    s.h_next = t % 2 == 0 ? h1 : h0;
    const unsigned tag = static_cast<unsigned>(t) + 1u;
    float x[4] = {0.f, 0.f, 0.f, 0.f};
    if (active) prefetch_x<BT>(s, d, b0, j, lane, x);
    if (tagged) {
      stage_h_tagged<BT>(s, d, b0, tagged + (t % 2) * words, tag, h_tile);
    } else {
      stage_h<BT, true>(s, d, b0, h_tile);
    }
    __syncthreads();  // also orders the resident copy before the first step's reads
    if (active) {
      float acc[G][BT];
      if constexpr (kRegChunks > 0) {
        unit_matvec_register<W, G, BT, kRegArray>(rows, resident_gates, reg, h_tile, H, lane, acc);
      } else {
        unit_matvec<W, G, BT>(rows, h_tile, H, lane, acc);
      }
      finish_tile<G, BT>(s, d, b0, j, lane, acc, x, h_tile,
                         tagged ? tagged + ((t + 1) % 2) * words : nullptr, tag + 1u);
    }
    // The last step needs no barrier: the launch's end orders it before what reads h. With the
    // tagged exchange the next step's loads wait for their data; the block only has to finish
    // reading h_tile before it is overwritten. Buffer (t + 1) % 2 is free to overwrite: its
    // readers (step t - 1) are done, since this block has seen every unit of step t - 1's output,
    // which each writer produced after its own reads.
    if (t + 1 < s.seq) {
      if (tagged) {
        __syncthreads();
      } else {
        group_barrier(arrived, static_cast<unsigned>(t + 1) * gridDim.x);
      }
    }
  }
}

// Blocks of `kernel` with `shared` bytes that fit on the device at once (0 when it cannot take
// that much shared memory per block).
cudaError_t resident_blocks(const void* kernel, std::size_t shared, long long* out) {
  int device = 0, sms = 0, per_sm = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return e;
  *out = 0;
  if (shared > static_cast<std::size_t>(optin)) return cudaSuccess;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kFusedWarps * 32, shared);
  if (e != cudaSuccess) return e;
  *out = static_cast<long long>(sms) * per_sm;
  return cudaSuccess;
}

// VOXRT_CUDA_RESIDENT_GATES=N caps the gates kept in shared memory (tests use it to run the
// partly resident and the streaming paths at small sizes); unset: as many as fit.
int resident_gates_cap(int gates) {
  const char* v = std::getenv("VOXRT_CUDA_RESIDENT_GATES");
  if (!v || !*v) return gates;
  const int n = std::atoi(v);
  return n < 0 ? 0 : n > gates ? gates : n;
}

// VOXRT_CUDA_REGISTER_GATE=0 turns the register-held gate off (tests run both paths).
bool register_gate_allowed() {
  const char* v = std::getenv("VOXRT_CUDA_REGISTER_GATE");
  return !(v && v[0] == '0');
}

// VOXRT_CUDA_TAGGED_STATE=0: the blocks meet at the arrival counters between steps instead of
// waiting on the tagged state words (kept to compare the two and as a fallback).
bool tagged_state_allowed() {
  const char* v = std::getenv("VOXRT_CUDA_TAGGED_STATE");
  return !(v && v[0] == '0');
}

// Above 48 KiB of shared memory a kernel must opt in; once per kernel and process, on the first
// (eager) launch, so never inside a graph capture.
template <typename W, int G, int BT, int kRegChunks>
cudaError_t opt_in_shared_memory() {
  static const cudaError_t opted_in = allow_max_dynamic_shared_memory(
      reinterpret_cast<const void*>(persistent_kernel<W, G, BT, kRegChunks>));
  return opted_in;
}

template <typename W, int G, int BT>
cudaError_t launch_persistent_typed(const RecurrentStep& s, const W* r, float* h0, float* h1,
                                    GridBarrier* barrier, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((s.hidden + kFusedWarps - 1) / kFusedWarps),
                  static_cast<unsigned>(s.directions),
                  static_cast<unsigned>((s.batch + BT - 1) / BT));
  const long long blocks = static_cast<long long>(grid.x) * grid.y * grid.z;
  const std::size_t h_bytes = static_cast<std::size_t>(BT * s.hidden) * sizeof(float);
  const std::size_t gate_bytes =
      static_cast<std::size_t>(kFusedWarps) * static_cast<std::size_t>(s.hidden) * sizeof(W);
  const void* streaming = reinterpret_cast<const void*>(persistent_kernel<W, G, BT, 0>);
  cudaError_t e = opt_in_shared_memory<W, G, BT, 0>();
  if (e != cudaSuccess) return e;
  // The register-held gate at batch 1 only: with a batch tile of 4 the kernel already needs
  // ~128 registers and the 32 more spilled (ptxas -v), which costs more than the gate saves.
  const void* with_register_gate = nullptr;
  if constexpr (BT == 1) {
    with_register_gate =
        reinterpret_cast<const void*>(persistent_kernel<W, G, BT, kRegisterChunks>);
    e = opt_in_shared_memory<W, G, BT, kRegisterChunks>();
    if (e != cudaSuccess) return e;
  }
  const bool register_gate =
      with_register_gate && register_gate_allowed() && s.hidden <= kRegisterChunks * 128;
  // Every block must be resident at once (they wait for each other): as many gates in shared
  // memory as still let the whole grid fit, down to none (all streamed from L2 every step), and
  // below all of them the next gate in registers when the grid still fits with the register
  // kernel. The launch is cooperative, which the driver refuses rather than deadlocks when it
  // would not fit.
  int resident_gates = resident_gates_cap(G);
  std::size_t shared = 0;
  const void* kernel = nullptr;
  for (;; --resident_gates) {
    shared = h_bytes + static_cast<std::size_t>(resident_gates) * gate_bytes;
    long long fit = 0;
    if (register_gate && resident_gates < G) {
      e = resident_blocks(with_register_gate, shared, &fit);
      if (e != cudaSuccess) return e;
      if (blocks <= fit) {
        kernel = with_register_gate;
        break;
      }
    }
    e = resident_blocks(streaming, shared, &fit);
    if (e != cudaSuccess) return e;
    if (blocks <= fit) {
      kernel = streaming;
      break;
    }
    if (resident_gates == 0) return cudaErrorCooperativeLaunchTooLarge;
  }
  // One memset clears the counters and both tagged buffers (a tag left by the previous launch
  // would otherwise be taken for this one's).
  const bool use_tags = tagged_state_allowed();
  e = cudaMemsetAsync(barrier, 0,
                      use_tags ? grid_barrier_bytes(s.directions, s.batch, s.hidden)
                               : sizeof(GridBarrier) * grid.y * grid.z,
                      stream);
  if (e != cudaSuccess) return e;
  RecurrentStep step = s;
  const W* weights = r;
  unsigned long long* tagged =
      use_tags ? tagged_state_words(barrier, s.directions, s.batch) : nullptr;
  void* args[] = {&step, &weights, &h0, &h1, &barrier, &tagged, &resident_gates};
  return cudaLaunchCooperativeKernel(kernel, grid, dim3(kFusedWarps * 32), args, shared, stream);
}

template <typename W>
cudaError_t launch_persistent(const RecurrentStep& s, const W* r, float* h0, float* h1,
                              GridBarrier* barrier, cudaStream_t stream) {
  if (s.batch == 1) {
    return s.gates == 3 ? launch_persistent_typed<W, 3, 1>(s, r, h0, h1, barrier, stream)
                        : launch_persistent_typed<W, 4, 1>(s, r, h0, h1, barrier, stream);
  }
  return s.gates == 3 ? launch_persistent_typed<W, 3, kBatchTile>(s, r, h0, h1, barrier, stream)
                      : launch_persistent_typed<W, 4, kBatchTile>(s, r, h0, h1, barrier, stream);
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
