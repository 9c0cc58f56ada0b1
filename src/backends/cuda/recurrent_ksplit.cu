// The K-split persistent kernel (cuda_ops.h, recurrent_persistent_ksplit): every step of an LSTM
// layer at batch 1 in one cooperative launch, like persistent_kernel (recurrent_ops.cu), with the
// block's work cut the other way. FP32 R runs on CUDA cores (FloatSliceRows), FP16/BF16 R on
// tensor cores (TensorCoreSliceRows, below).
//
// persistent_kernel gives each warp one unit: the warp reads its unit's four rows of R and the
// whole of h, so each of a block's 16 warps reads all of h from shared memory every step (64 KB a
// step on top of 192 KB of R rows at H = 1024), and one lane per unit finishes it after a warp
// reduction. Here each warp takes a slice of k (H / 16 elements) for all 64 rows of the block's
// 16 units: a lane owns two rows (2l and 2l + 1, i.e. unit l / 2, gates 2 (l % 2) and +1) of the
// slice, so
//   - h is read once a step per block (each warp its slice, broadcast to the lanes), and a warp
//     stages only its own slice of the tagged state words, without waiting for the other warps;
//   - half of R lives in registers (row 2l: H / 16 floats a lane, 64 at H = 1024) and half in
//     shared memory (row 2l + 1), so a step reads 128 KB of R from shared memory instead of 192;
//   - there is no warp reduction: the warps' partial sums meet in shared memory (double
//     buffered, so one __syncthreads a step), where two warps sum them (thread i row i), add the
//     row's input projection and apply the gate's activation, and the lane of each unit's first
//     gate gathers the four activations with three shuffles and finishes the cell;
//   - each of those threads loads its row's input projection one step ahead into a register, so
//     the step does not wait for it. FP32 BiLSTM on an H100, sum + gate phases of a step: x
//     loaded by the unit's owner at the start of the step (as persistent_kernel does) 0.82 of
//     2.24 us; copied two steps ahead into shared memory with cp.async 0.75 of 2.06 us; one step
//     ahead in a register 0.56 of 1.90 us.
// The state exchange between blocks is the tagged one of persistent_kernel (tagged_state.cuh).
//
// FP16/BF16 R: the warp's 64 rows x slice are m16n8k16 A fragments held in
// registers for the whole launch (64 registers a lane at H = 1024: all of R on chip, none of it
// in shared memory), and the slice mat-vec is 4 x H / 256 tensor-core mma with float
// accumulation, h rounded to R's type as the B operand (every column of B is h, so every lane
// ends with its rows' sums). The half -> float conversions of R that bound persistent_kernel's
// FP16 mat-vec (~1.4 us a step) are gone.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <type_traits>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/mma_sync.cuh"
#include "backends/cuda/phase_trace.cuh"
#include "backends/cuda/recurrent_cell.cuh"
#include "backends/cuda/recurrent_trace.h"
#include "backends/cuda/shared_memory_opt_in.cuh"
#include "backends/cuda/tagged_state.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

constexpr int kWarps = kKsplitWarps;  // one k slice of H / 16 each
constexpr int kThreads = kWarps * 32;
constexpr int kGates = 4;                                   // LSTM i, o, f, c
constexpr int kUnits = 16;                                  // a block's units
constexpr int kRows = kGates * kUnits;                      // row u * 4 + g: gate g of unit u
constexpr int kMaxQuads = kKsplitMaxHidden / kWarps / 4;    // float4s of a lane's slice of a row
constexpr int kMaxKTiles = kKsplitMaxHidden / kWarps / 16;  // k16 tiles of a warp's slice
constexpr int kMTiles = kRows / 16;                         // m16 tiles of the block's rows
static_assert(kRows == 2 * 32, "each lane owns two rows of the block");

const TracePhaseNames kKsplitPhases = {
    "ksplit",
    {"stage the warp's h slice", "wait for block (syncthreads)", "slice mat-vec",
     "sum slices + input projection", "gates + cell + publish"}};

// Shared memory, in floats: R rows (FP32 only: [kWarps][quads][32 lanes] as float4, lane l's row
// 2l + 1), h [H] (warp w's slice at w * H / 16), partial sums [2][kWarps][kRows].
__host__ __device__ std::int64_t shared_rows_floats(std::int64_t H, bool float_rows) {
  return float_rows ? 32 * H : 0;
}
std::size_t shared_bytes(std::int64_t H, bool float_rows) {
  return static_cast<std::size_t>(shared_rows_floats(H, float_rows) + H + 2 * kWarps * kRows) *
         sizeof(float);
}

// Row r of a block (gate r % 4 of unit j0 + r / 4) in R [D][4H][H], from column k.
__device__ __forceinline__ std::int64_t r_offset(int d, std::int64_t H, std::int64_t j0, int row,
                                                 std::int64_t k) {
  return ((static_cast<std::int64_t>(d) * kGates + row % kGates) * H + j0 + row / kGates) * H + k;
}

__device__ __forceinline__ float dot4(const float4& w, const float4& h) {
  return w.x * h.x + w.y * h.y + w.z * h.z + w.w * h.w;
}

// FP32 R on CUDA cores: lane l's rows 2l (registers) and 2l + 1 (shared memory) of the warp's
// slice; each lane reads the slice of h as float4 broadcasts.
struct FloatSliceRows {
  float4 reg[kMaxQuads];
  const float4* shared;  // the lane's copies: quad i at shared[i * 32]
  int quads;

  // The prologue: 16-byte cp.async copies into shared memory, all in flight before the one wait
  // (each lane reads back only its own).
  __device__ __forceinline__ void load(const float* r, int d, std::int64_t H, std::int64_t j0,
                                       std::int64_t k0, int slice, int warp, int lane,
                                       float* rows_smem) {
    quads = slice / 4;
    float4* const mine = reinterpret_cast<float4*>(rows_smem) + warp * quads * 32 + lane;
    shared = mine;
    const float* row_a = r + r_offset(d, H, j0, 2 * lane, k0);
    const float* row_b = r + r_offset(d, H, j0, 2 * lane + 1, k0);
#pragma unroll
    for (int i = 0; i < kMaxQuads; ++i) {
      reg[i] = i < quads ? __ldg(reinterpret_cast<const float4*>(row_a) + i)
                         : make_float4(0.f, 0.f, 0.f, 0.f);
    }
    for (int i = 0; i < quads; ++i) {
      const auto dst = static_cast<unsigned>(__cvta_generic_to_shared(mine + i * 32));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(row_b + 4 * i)
                   : "memory");
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
  }

  // partial[row] = the slice's part of row . h, for the warp's 64 rows.
  __device__ __forceinline__ void multiply(const float* h_slice, int lane, float* partial) const {
    float acc_a[2] = {0.f, 0.f}, acc_b[2] = {0.f, 0.f};  // two chains each: even and odd quads
#pragma unroll
    for (int i = 0; i < kMaxQuads; ++i) {
      if (i < quads) {
        const float4 h = reinterpret_cast<const float4*>(h_slice)[i];  // one broadcast load
        acc_a[i % 2] += dot4(reg[i], h);
        acc_b[i % 2] += dot4(shared[i * 32], h);
      }
    }
    *reinterpret_cast<float2*>(partial + 2 * lane) =
        make_float2(acc_a[0] + acc_a[1], acc_b[0] + acc_b[1]);
  }
};

// FP16/BF16 R on tensor cores: the warp's 64 rows x slice as A fragments in registers. In a
// fragment, lane (group g = lane / 4, t = lane % 4) holds rows g and g + 8 of its m16 tile at
// columns 2t, 2t + 1 and 2t + 8, 2t + 9 of its k16 tile.
template <typename W>
struct TensorCoreSliceRows {
  unsigned a[kMTiles][kMaxKTiles][4];
  int ktiles;

  __device__ __forceinline__ void load(const W* r, int d, std::int64_t H, std::int64_t j0,
                                       std::int64_t k0, int slice, int /*warp*/, int lane,
                                       float* /*rows_smem*/) {
    ktiles = slice / 16;
    const int group = lane / 4, t = lane % 4;
    const auto word = [&](int row, std::int64_t k) {
      return __ldg(reinterpret_cast<const unsigned*>(r + r_offset(d, H, j0, row, k)));
    };
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
#pragma unroll
      for (int kt = 0; kt < kMaxKTiles; ++kt) {
        const int row = m * 16 + group;
        const std::int64_t k = k0 + kt * 16 + 2 * t;
        const bool in = kt < ktiles;
        a[m][kt][0] = in ? word(row, k) : 0u;
        a[m][kt][1] = in ? word(row + 8, k) : 0u;
        a[m][kt][2] = in ? word(row, k + 8) : 0u;
        a[m][kt][3] = in ? word(row + 8, k + 8) : 0u;
      }
    }
  }

  // Every column of B is the slice of h, so every column of the product holds the rows' sums:
  // lane (g, t) takes m16 tile t's rows g and g + 8 from its first column pair.
  __device__ __forceinline__ void multiply(const float* h_slice, int lane, float* partial) const {
    const int group = lane / 4, t = lane % 4;
    float c[kMTiles][4] = {};
#pragma unroll
    for (int kt = 0; kt < kMaxKTiles; ++kt) {
      if (kt < ktiles) {
        const float2 lo = *reinterpret_cast<const float2*>(h_slice + kt * 16 + 2 * t);
        const float2 hi = *reinterpret_cast<const float2*>(h_slice + kt * 16 + 2 * t + 8);
        const unsigned b[2] = {pack2<W>(lo.x, lo.y), pack2<W>(hi.x, hi.y)};
#pragma unroll
        for (int m = 0; m < kMTiles; ++m) mma16816<W>(c[m], a[m][kt], b);
      }
    }
    float upper = c[0][0], lower = c[0][2];
#pragma unroll
    for (int m = 1; m < kMTiles; ++m) {
      if (t == m) {
        upper = c[m][0];
        lower = c[m][2];
      }
    }
    partial[t * 16 + group] = upper;
    partial[t * 16 + group + 8] = lower;
  }
};

template <typename W>
using SliceRows =
    std::conditional_t<std::is_same_v<W, float>, FloatSliceRows, TensorCoreSliceRows<W>>;

template <typename W>
__global__ void __launch_bounds__(kThreads, 1)
    ksplit_kernel(RecurrentStep s, const W* __restrict__ r, float* h0, float* h1,
                  unsigned long long* tagged, unsigned long long* trace) {
  extern __shared__ __align__(16) float smem[];
  const std::int64_t H = s.hidden;
  const int slice = static_cast<int>(H / kWarps);  // the launcher checks its multiple
  const int d = blockIdx.y;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t j0 = static_cast<std::int64_t>(blockIdx.x) * kUnits;
  const std::int64_t k0 = static_cast<std::int64_t>(warp) * slice;
  const std::int64_t rows_floats = shared_rows_floats(H, std::is_same_v<W, float>);
  float* const h_slice = smem + rows_floats + k0;
  float* const partials = smem + rows_floats + H;

  SliceRows<W> rows;
  rows.load(r, d, H, j0, k0, slice, warp, lane, smem);

  // Thread i < kRows finishes row i (gate i % 4 of unit j0 + i / 4): it sums the row over the
  // warps and adds its input projection (walked one time step per step, backwards in reverse);
  // thread 4u owns unit j0 + u: its cell state, its y row and its publication.
  const bool reducer = threadIdx.x < kRows;
  const bool owner = reducer && threadIdx.x % kGates == 0;
  const int gate = threadIdx.x % kGates;
  const std::int64_t j = j0 + (reducer ? threadIdx.x / kGates : 0);
  const std::int64_t owned_state = static_cast<std::int64_t>(d) * H + j;
  const bool reverse = s.reverse_only || d == 1;
  const std::int64_t t_first = reverse ? s.seq - 1 : 0;
  const std::int64_t x_step = (reverse ? -1 : 1) * s.directions * kGates * H;
  const std::int64_t y_step = (reverse ? -1 : 1) * s.directions * H;
  const float* x_next = s.xw + (t_first * s.directions + d) * kGates * H + gate * H + j;
  float x_held = 0.0f;  // this step's input projection of the row
  if (reducer) {
    x_held = __ldg(x_next);
    x_next += x_step;
  }
  float* y_row = s.y && owner ? s.y + t_first * s.directions * H + owned_state : nullptr;
  float c_held = owner ? s.c[owned_state] : 0.0f;
  const std::int64_t words = static_cast<std::int64_t>(s.directions) * H;
  if (owner) store_tagged(tagged + owned_state, h0[owned_state], 1u);

  PhaseTrace trace_phases(trace);
  constexpr unsigned kAll = 0xffffffffu;
  for (std::int64_t t = 0; t < s.seq; ++t) {
    const unsigned tag = static_cast<unsigned>(t) + 1u;
    // The warp's slice of h, two words a lane per pass. Its previous contents were last read by
    // this warp's mat-vec of the step before, which every lane finished before that step's
    // __syncthreads.
    const unsigned long long* src =
        tagged + (t % 2) * words + static_cast<std::int64_t>(d) * H + k0;
    for (int k = lane * 2; k < slice; k += 64) {
      ulonglong2 v = load_tagged_pair(src + k);
      while (!pair_has_tag(v, tag)) v = load_tagged_pair(src + k);
      *reinterpret_cast<float2*>(h_slice + k) = make_float2(
          __uint_as_float(static_cast<unsigned>(v.x)), __uint_as_float(static_cast<unsigned>(v.y)));
    }
    __syncwarp();
    trace_phases.lap(0);
    // Step t's partial sums go to buffer t % 2: the reducers read buffer t % 2 of step t - 2
    // before they reached step t - 1's __syncthreads, which this warp has passed.
    float* partial = partials + (t % 2) * (kWarps * kRows);
    rows.multiply(h_slice, lane, partial + warp * kRows);
    trace_phases.lap(2);
    __syncthreads();
    trace_phases.lap(1);
    if (reducer) {  // warps 0 and 1, whole
      float sum[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int w = 0; w < kWarps; ++w) sum[w % 4] += partial[w * kRows + threadIdx.x];
      const float pre = (sum[0] + sum[1]) + (sum[2] + sum[3]) + x_held;
      trace_phases.lap(3);
      if (t + 1 < s.seq) x_held = __ldg(x_next);  // used a step from now
      x_next += x_step;
      // The ONNX LSTM's activations as cell_update<true> computes them: sigmoid for i, o, f,
      // tanh(v) = 2 sigmoid(2v) - 1 for the cell gate; each thread its own row's.
      const float sig = sigmoid<true>(gate == 3 ? 2.0f * pre : pre);
      const float act = gate == 3 ? 2.0f * sig - 1.0f : sig;
      const float act_o = __shfl_down_sync(kAll, act, 1);
      const float act_f = __shfl_down_sync(kAll, act, 2);
      const float act_c = __shfl_down_sync(kAll, act, 3);
      if (owner) {
        c_held = act_f * c_held + act * act_c;
        const float h = act_o * tanh_of<true>(c_held);
        if (y_row) *y_row = h;
        if (t + 1 < s.seq) {
          store_tagged(tagged + ((t + 1) % 2) * words + owned_state, h, tag + 1u);
        } else {
          (t % 2 == 0 ? h1 : h0)[owned_state] = h;  // where the per-step loop leaves it
        }
      }
    }
    trace_phases.lap(4);
    if (y_row) y_row += y_step;
  }
  if (owner) s.c[owned_state] = c_held;
  trace_phases.finish(blockIdx.y * gridDim.x + blockIdx.x);
}

// The hidden sizes a weight type takes: a warp's slice of H / 16 in whole float4s (FP32) or
// whole k16 tiles (FP16/BF16).
std::int64_t hidden_multiple(LowType r_type) {
  return r_type == LowType::kF32 ? kWarps * 4 : kWarps * 16;
}

template <typename W>
cudaError_t launch_ksplit(const RecurrentStep& s, const W* r, float* h0, float* h1,
                          GridBarrier* barrier, cudaStream_t stream) {
  const void* kernel = reinterpret_cast<const void*>(ksplit_kernel<W>);
  static const cudaError_t opted_in = allow_max_dynamic_shared_memory(kernel);
  if (opted_in != cudaSuccess) return opted_in;
  const dim3 grid(static_cast<unsigned>(s.hidden / kUnits), static_cast<unsigned>(s.directions));
  const std::size_t shared = shared_bytes(s.hidden, std::is_same_v<W, float>);
  long long fit = 0;
  cudaError_t e = resident_blocks(kernel, kThreads, shared, &fit);
  if (e != cudaSuccess) return e;
  const long long blocks = static_cast<long long>(grid.x) * grid.y;
  if (blocks > fit) return cudaErrorNotSupported;
  // Both tagged buffers start at tag 0: a tag left by the previous launch would be taken for
  // this one's.
  e = cudaMemsetAsync(barrier, 0, grid_barrier_bytes(s.directions, 1, s.hidden), stream);
  if (e != cudaSuccess) return e;
  RecurrentStep step = s;
  const W* weights = r;
  unsigned long long* tagged = tagged_state_words(barrier, s.directions, 1);
  unsigned long long* trace = recurrent_trace_buffer(blocks, s.seq, kWarps, kKsplitPhases);
  void* args[] = {&step, &weights, &h0, &h1, &tagged, &trace};
  return cudaLaunchCooperativeKernel(kernel, grid, dim3(kThreads), args, shared, stream);
}

}  // namespace

bool ksplit_applies(const RecurrentStep& s, LowType r_type) {
  return s.gates == kGates && s.batch == 1 && s.hidden % hidden_multiple(r_type) == 0 &&
         s.hidden <= kKsplitMaxHidden && s.seq > 0;
}

cudaError_t recurrent_persistent_ksplit(const RecurrentStep& s, const void* r, LowType r_type,
                                        float* h0, float* h1, GridBarrier* barrier,
                                        cudaStream_t stream) {
  if (!ksplit_applies(s, r_type)) return cudaErrorNotSupported;
  switch (r_type) {
    case LowType::kF32:
      return launch_ksplit(s, static_cast<const float*>(r), h0, h1, barrier, stream);
    case LowType::kF16:
      return launch_ksplit(s, static_cast<const __half*>(r), h0, h1, barrier, stream);
    case LowType::kBF16:
      return launch_ksplit(s, static_cast<const __nv_bfloat16*>(r), h0, h1, barrier, stream);
  }
  return cudaErrorNotSupported;
}

}  // namespace voxrt::backends::cuda::ops
