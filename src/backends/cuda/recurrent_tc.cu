// The persistent_tc recurrent tactic (cuda_ops.h): every time step of a GRU/LSTM layer in one
// cooperative launch, the recurrent product on WMMA tensor cores (16x16x16, FP16 or BF16
// operands, float accumulation). It is meant for large batches (256 streams of a chunk), where
// the per-step GEMM + gate kernel pair spends most of its time in launches and in the float gate
// matrix going through memory between them.
//
// Block (unit block u, direction d, batch tile z) owns the cells (batch rows z*BT .. +BT, units
// u*16 .. +16) for the whole launch:
//   - its rows of R, [gate][16 units][H], sit in shared memory from the start, so each 16-column
//     WMMA tile of the product is one gate of the block's 16 units;
//   - per step it stages h_prev of its batch rows (every unit, in the operand type) in shared
//     memory, and 8 warps multiply it by the R rows: warp w takes the 16-row tile w % (BT / 16)
//     and every (8 / (BT / 16))-th 16-wide slice of k, so all warps are busy at either tile size;
//   - the partial products meet in shared memory (float) and each thread finishes its cells:
//     the gates, c and the float h stay in registers, the new h goes to Y (float) and, in the
//     operand type, to the exchange buffer the other blocks of its rows read next step;
//   - the blocks of one (direction, batch tile) meet at an arrival barrier between steps; the
//     exchange buffer is double-buffered, so one barrier a step is enough.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <mma.h>

#include "backends/cuda/cuda_ops.h"
#include "backends/cuda/operand_convert.cuh"
#include "backends/cuda/recurrent_cell.cuh"
#include "backends/cuda/shared_memory_opt_in.cuh"

namespace voxrt::backends::cuda::ops {
namespace {

namespace wmma = nvcuda::wmma;

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kUnits = kRecurrentTcUnits;  // units per block: one 16-column tile per gate
constexpr int kPad = 8;                    // elements after each shared row (bank spread)

struct TcLayout {
  std::size_t r_offset = 0, h_offset = 0, acc_offset = 0, bytes = 0;
};

// Shared memory: R rows [G*16][H + pad], h tile [BT][H + pad] (operand type), partial products
// [k_splits][BT][G*16] (float). Every part starts on a 32-byte boundary, as WMMA wants.
__host__ __device__ inline TcLayout tc_layout(int gates, int batch_tile, std::int64_t hidden,
                                              std::size_t operand_bytes) {
  const auto ld = static_cast<std::size_t>(hidden + kPad);
  const int k_splits = kWarps / (batch_tile / 16);
  TcLayout l;
  l.r_offset = 0;
  l.h_offset = static_cast<std::size_t>(gates * kUnits) * ld * operand_bytes;
  l.acc_offset = l.h_offset + static_cast<std::size_t>(batch_tile) * ld * operand_bytes;
  l.bytes = l.acc_offset + static_cast<std::size_t>(k_splits * batch_tile * gates * kUnits) * 4;
  return l;
}

// h rows b0 .. b0 + BT - 1 of direction d into the shared tile, 8 elements at a time (H % 16 ==
// 0): from the exchange buffer (operand type, written by other blocks: read past L1), or at the
// first step from the float initial state (null: zeros). Rows past the batch are zeros.
template <typename W, int BT>
__device__ __forceinline__ void stage_rows(const W* exchange, const float* initial,
                                           std::int64_t batch, std::int64_t H, int d,
                                           std::int64_t b0, W* tile) {
  const std::int64_t vectors_per_row = H / 8;
  const std::int64_t ld = H + kPad;
  for (std::int64_t v = threadIdx.x; v < BT * vectors_per_row; v += kThreads) {
    const std::int64_t row = v / vectors_per_row, k = (v % vectors_per_row) * 8;
    const std::int64_t b = b0 + row;
    uint4 packed = make_uint4(0u, 0u, 0u, 0u);
    if (b < batch) {
      const std::int64_t at = (d * batch + b) * H + k;
      if (exchange) {
        packed = __ldcg(reinterpret_cast<const uint4*>(exchange + at));
      } else if (initial) {
        const float4 lo = *reinterpret_cast<const float4*>(initial + at);
        const float4 hi = *reinterpret_cast<const float4*>(initial + at + 4);
        W* e = reinterpret_cast<W*>(&packed);
        e[0] = from_float<W>(lo.x);
        e[1] = from_float<W>(lo.y);
        e[2] = from_float<W>(lo.z);
        e[3] = from_float<W>(lo.w);
        e[4] = from_float<W>(hi.x);
        e[5] = from_float<W>(hi.y);
        e[6] = from_float<W>(hi.z);
        e[7] = from_float<W>(hi.w);
      }
    }
    *reinterpret_cast<uint4*>(tile + row * ld + k) = packed;
  }
}

template <typename W, int G, int BT>
__global__ void __launch_bounds__(kThreads, 1) persistent_tc_kernel(RecurrentTcLaunch p) {
  extern __shared__ __align__(128) unsigned char shared[];
  constexpr int kRowTiles = BT / 16;
  constexpr int kSplits = kWarps / kRowTiles;
  constexpr int kCells = BT * kUnits / kThreads;  // cells per thread
  constexpr int kCols = G * kUnits;
  static_assert(kWarps % kRowTiles == 0 && BT * kUnits % kThreads == 0);
  const RecurrentStep& s = p.step;
  const std::int64_t H = s.hidden, B = s.batch, T = s.seq;
  const int D = s.directions;
  const int d = static_cast<int>(blockIdx.y);
  const std::int64_t u0 = static_cast<std::int64_t>(blockIdx.x) * kUnits;
  const std::int64_t b0 = static_cast<std::int64_t>(blockIdx.z) * BT;
  const std::int64_t ld = H + kPad;
  const TcLayout layout = tc_layout(G, BT, H, sizeof(W));
  W* r_rows = reinterpret_cast<W*>(shared + layout.r_offset);
  W* h_tile = reinterpret_cast<W*>(shared + layout.h_offset);
  float* partial = reinterpret_cast<float*>(shared + layout.acc_offset);
  unsigned* arrived = &p.barrier[blockIdx.y * gridDim.z + blockIdx.z].arrived;
  const W* r = static_cast<const W*>(p.r);
  W* exchange = static_cast<W*>(p.exchange);
  const std::int64_t exchange_words = static_cast<std::int64_t>(D) * B * H;

  // R rows of this block's units: row n = gate n / 16, unit u0 + n % 16.
  const std::int64_t vectors_per_row = H / 8;
  for (std::int64_t v = threadIdx.x; v < kCols * vectors_per_row; v += kThreads) {
    const std::int64_t n = v / vectors_per_row, k = (v % vectors_per_row) * 8;
    const W* src = r + ((static_cast<std::int64_t>(d) * G + n / kUnits) * H + u0 + n % kUnits) * H;
    *reinterpret_cast<uint4*>(r_rows + n * ld + k) = *reinterpret_cast<const uint4*>(src + k);
  }

  // The thread's cells: cell c = threadIdx.x + i * kThreads is (row c / 16, unit c % 16), so a
  // warp's lanes take 16 neighbouring units of two rows.
  float h_own[kCells], c_own[kCells], rbn[kCells];
#pragma unroll
  for (int i = 0; i < kCells; ++i) {
    const int cell = threadIdx.x + i * kThreads;
    const std::int64_t b = b0 + cell / kUnits, j = u0 + cell % kUnits;
    const std::int64_t state = (d * B + b) * H + j;
    const bool in_batch = b < B;
    h_own[i] = in_batch && p.h_initial ? p.h_initial[state] : 0.0f;
    c_own[i] = in_batch && p.c_initial ? p.c_initial[state] : 0.0f;
    rbn[i] = s.rbn ? s.rbn[d * H + j] : 0.0f;
  }

  const int warp = threadIdx.x / 32;
  const int row_tile = warp % kRowTiles, split = warp / kRowTiles;
  const bool reverse = s.reverse_only || d == 1;
  for (std::int64_t t = 0; t < T; ++t) {
    const std::int64_t tt = reverse ? T - 1 - t : t;
    // The input projection of the thread's cells, loaded first so its latency hides behind the
    // staging and the product.
    float x[kCells][4] = {};
#pragma unroll
    for (int i = 0; i < kCells; ++i) {
      const int cell = threadIdx.x + i * kThreads;
      const std::int64_t b = b0 + cell / kUnits, j = u0 + cell % kUnits;
      if (b < B) {
        const float* row = s.xw + ((tt * B + b) * D + d) * G * H;
#pragma unroll
        for (int g = 0; g < G; ++g) x[i][g] = row[g * H + j];
      }
    }
    stage_rows<W, BT>(t == 0 ? nullptr : exchange + (t % 2) * exchange_words, p.h_initial, B, H, d,
                      b0, h_tile);
    __syncthreads();  // also orders the R copy before the first product

    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[G];
#pragma unroll
    for (int g = 0; g < G; ++g) wmma::fill_fragment(acc[g], 0.0f);
    for (std::int64_t k = split * 16; k < H; k += kSplits * 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, W, wmma::row_major> a;
      wmma::load_matrix_sync(a, h_tile + row_tile * 16 * ld + k, static_cast<unsigned>(ld));
#pragma unroll
      for (int g = 0; g < G; ++g) {
        // R rows as a column-major [k, n] operand: element (k, n) at r_rows[n * ld + k].
        wmma::fragment<wmma::matrix_b, 16, 16, 16, W, wmma::col_major> b;
        wmma::load_matrix_sync(b, r_rows + g * kUnits * ld + k, static_cast<unsigned>(ld));
        wmma::mma_sync(acc[g], a, b, acc[g]);
      }
    }
#pragma unroll
    for (int g = 0; g < G; ++g) {
      wmma::store_matrix_sync(partial + (split * BT + row_tile * 16) * kCols + g * kUnits, acc[g],
                              kCols, wmma::mem_row_major);
    }
    __syncthreads();

    W* next = exchange + ((t + 1) % 2) * exchange_words;
#pragma unroll
    for (int i = 0; i < kCells; ++i) {
      const int cell = threadIdx.x + i * kThreads;
      const int row = cell / kUnits, unit = cell % kUnits;
      const std::int64_t b = b0 + row, j = u0 + unit;
      if (b >= B) continue;
      float rr[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
      for (int g = 0; g < G; ++g) {
#pragma unroll
        for (int sp = 0; sp < kSplits; ++sp)
          rr[g] += partial[(sp * BT + row) * kCols + g * kUnits + unit];
      }
      const float h = cell_update(G, x[i], rr, h_own[i], &c_own[i], rbn[i]);
      h_own[i] = h;
      const std::int64_t state = (d * B + b) * H + j;
      if (s.y) s.y[((tt * D + d) * B + b) * H + j] = h;
      if (t + 1 < T) next[state] = from_float<W>(h);
    }
    // Other blocks read this step's h after the barrier; this block's h_tile and partial are
    // rewritten only after it (the barrier starts with __syncthreads). The last step needs none.
    if (t + 1 < T) group_barrier(arrived, static_cast<unsigned>(t + 1) * gridDim.x);
  }
#pragma unroll
  for (int i = 0; i < kCells; ++i) {
    const int cell = threadIdx.x + i * kThreads;
    const std::int64_t b = b0 + cell / kUnits, j = u0 + cell % kUnits;
    if (b >= B) continue;
    const std::int64_t state = (d * B + b) * H + j;
    if (p.h_final) p.h_final[state] = h_own[i];
    if (p.c_final && G == 4) p.c_final[state] = c_own[i];
  }
}

template <typename W, int G, int BT>
const void* kernel_for() {
  return reinterpret_cast<const void*>(persistent_tc_kernel<W, G, BT>);
}

template <typename W>
const void* pick_kernel(int gates, int batch_tile) {
  if (gates == 3) return batch_tile == 64 ? kernel_for<W, 3, 64>() : kernel_for<W, 3, 32>();
  return batch_tile == 64 ? kernel_for<W, 4, 64>() : kernel_for<W, 4, 32>();
}

const void* kernel_of(LowType type, int gates, int batch_tile) {
  if (type == LowType::kF16) return pick_kernel<__half>(gates, batch_tile);
  if (type == LowType::kBF16) return pick_kernel<__nv_bfloat16>(gates, batch_tile);
  return nullptr;
}

// Whether a grid of `blocks` with `shared` bytes each is resident at once.
cudaError_t grid_fits(const void* kernel, std::size_t shared, long long blocks, bool* fits) {
  *fits = false;
  // Opting in once per kernel and process, on the eager call that plans the launch.
  cudaError_t e = allow_max_dynamic_shared_memory(kernel);
  long long fit = 0;
  if (e == cudaSuccess) e = resident_blocks(kernel, kThreads, shared, &fit);
  if (e == cudaSuccess) *fits = blocks <= fit;
  return e;
}

long long grid_blocks(int directions, std::int64_t batch, std::int64_t hidden, int batch_tile) {
  return (hidden / kUnits) * directions * ((batch + batch_tile - 1) / batch_tile);
}

}  // namespace

cudaError_t recurrent_tc_plan(int gates, int directions, std::int64_t batch, std::int64_t hidden,
                              LowType type, int* batch_tile) {
  *batch_tile = 0;
  if ((gates != 3 && gates != 4) || hidden <= 0 || hidden % kUnits != 0 || batch <= 0 ||
      type == LowType::kF32)
    return cudaSuccess;
  // The larger tile halves how often each block streams the R-sized h rows through the tensor
  // cores per cell; the smaller one is for small batches and for when 64 rows do not fit.
  for (int tile : {64, 32}) {
    if (tile == 64 && batch <= 32) continue;
    const std::size_t shared = tc_layout(gates, tile, hidden, 2).bytes;
    bool fits = false;
    const cudaError_t e = grid_fits(kernel_of(type, gates, tile), shared,
                                    grid_blocks(directions, batch, hidden, tile), &fits);
    if (e != cudaSuccess) return e;
    if (fits) {
      *batch_tile = tile;
      return cudaSuccess;
    }
  }
  return cudaSuccess;
}

cudaError_t recurrent_persistent_tc(const RecurrentTcLaunch& launch, LowType type, int batch_tile,
                                    cudaStream_t stream) {
  const RecurrentStep& s = launch.step;
  if (batch_tile != 32 && batch_tile != 64) return cudaErrorInvalidValue;
  const void* kernel = kernel_of(type, s.gates, batch_tile);
  if (!kernel || s.hidden % kUnits != 0) return cudaErrorInvalidValue;
  if (s.batch <= 0 || s.seq <= 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(s.hidden / kUnits), static_cast<unsigned>(s.directions),
                  static_cast<unsigned>((s.batch + batch_tile - 1) / batch_tile));
  cudaError_t e = cudaMemsetAsync(launch.barrier, 0, sizeof(GridBarrier) * grid.y * grid.z, stream);
  if (e != cudaSuccess) return e;
  const std::size_t shared = tc_layout(s.gates, batch_tile, s.hidden, 2).bytes;
  RecurrentTcLaunch args = launch;
  void* params[] = {&args};
  return cudaLaunchCooperativeKernel(kernel, grid, dim3(kThreads), params, shared, stream);
}

}  // namespace voxrt::backends::cuda::ops
