// Tactic "packed": hand-written AVX2/FMA GRU / LSTM / RNN for small batches (streaming speech:
// batch 1, a few hundred hidden units). Per step the cost is reading R once, so:
//  - R is packed gate-interleaved by blocks of 8 units (recurrent_packing.h) and streamed
//    contiguously; a block computes every gate of its units, nonlinearities fused;
//  - the input projection X.W^T of all steps is one GEMM up front (W is stored so that the
//    product lands in the gate-interleaved layout), split by unit blocks over threads: a
//    oneDNN matmul on one OpenMP thread with W packed once per column slice (AVX-512 where the
//    CPU has it, 3x OpenBLAS on the DS2 shapes), or OpenBLAS when W is only known at run time;
//  - threads share the steps through a StepSchedule (recurrent_step_schedule.h): each owns a
//    range of blocks, steals from the others when done, and a phase waits only for blocks in
//    flight, so a preempted thread does not stall the step; bidirectional layers run their
//    directions on separate thread groups.
// Tactic "packed_single_thread" is the same kernel on the calling thread only: at batch 1 a
// small layer can be faster alone than with a per-step hand-off, and timing decides.
// Tactic "packed_directions_in_turn" (bidirectional nodes) runs one direction after the other,
// each on every thread: per step the threads then read one direction's R, not both at once, so
// when one direction's R about fits the last-level cache and both do not (a 1024-unit LSTM: 16
// MiB each against a 16 MiB L3), the steps are served from the cache rather than from DRAM.
// Scratch lives on the calling thread's stack/heap per call: the kernel is const and reentrant.
#include <cblas.h>
#include <cpuid.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <vector>

#include "backends/cpu/dense/onednn_common.h"
#include "backends/cpu/recurrent/recurrent_int8_product.h"
#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "backends/cpu/recurrent/recurrent_packing.h"
#include "backends/cpu/recurrent/recurrent_step_schedule.h"
#include "backends/cpu/recurrent/recurrent_vector_math.h"
#include "core/thread_pool.h"

// AVX2 and FMA, plus F16C for the FP16 panels (every x86 CPU with AVX2 has it; packed_available
// checks all three).
#define VOXRT_PACKED_ISA __attribute__((target("avx2,fma,f16c")))

namespace voxrt::backends::cpu::recurrent {
namespace {

constexpr int kLanes = static_cast<int>(kUnitBlock);
// How far ahead (bytes) the batch-1 recurrent product prefetches its panel.
constexpr std::int64_t kPrefetchBytes = 8192;
// Bytes of W per slice of the input projection (see project_inputs).
constexpr std::int64_t kProjectionSliceBytes = std::int64_t{1} << 20;

// OpenBLAS (pthread build) has one global thread count; the projection is split across our
// own pool, so OpenBLAS must not start threads of its own.
void keep_openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

// Rows of one register tile for `gates` side-by-side panels (accumulators rows*gates <= 12).
constexpr int max_tile_rows(int gates) {
  return gates == 1 ? 8 : gates == 2 ? 6 : gates == 3 ? 4 : 3;
}

// 8 weights of a panel as FP32: W = float (f32 panels) or std::uint16_t (f16 panels, widened by
// F16C's vcvtph2ps, exact).
template <typename W>
VOXRT_PACKED_ISA inline __m256 load_weights(const W* p) {
  if constexpr (std::is_same_v<W, float>) {
    return _mm256_load_ps(p);
  } else {
    return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(p)));
  }
}

// out[m][g*8 .. g*8+8) = init[g*8 ..] + sum_k a[m][k] * panel[k][g][0..8) for M rows.
template <typename W, int G, int M>
VOXRT_PACKED_ISA void tile_multiply(const float* const* a, std::int64_t depth, const W* panel,
                                    const float* init, float* const* out) {
  __m256 acc[M][G];
#pragma GCC unroll 12
  for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) {
      acc[m][g] = init ? _mm256_loadu_ps(init + g * kLanes) : _mm256_setzero_ps();
    }
  }
  std::int64_t k = 0;
  if constexpr (M == 1) {
    // One row (batch 1): a second set of accumulators hides the FMA latency.
    constexpr std::int64_t kPrefetchAhead = kPrefetchBytes / static_cast<std::int64_t>(sizeof(W));
    // One prefetch per 64-byte line of the two rows of k consumed per iteration.
    constexpr int kLinesPerPair = static_cast<int>((2 * G * kLanes * sizeof(W) + 63) / 64);
    __m256 acc2[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc2[g] = _mm256_setzero_ps();
    for (; k + 1 < depth; k += 2) {
      const __m256 a0 = _mm256_broadcast_ss(a[0] + k);
      const __m256 a1 = _mm256_broadcast_ss(a[0] + k + 1);
      const W* p0 = panel + k * G * kLanes;
      // R streams from L3 when it is larger than L2 (one core alone); the hardware prefetcher
      // keeps too few lines in flight for that, so ask for the panel a few KiB ahead (harmless
      // past its end: prefetches do not fault).
#pragma GCC unroll 4
      for (int line = 0; line < kLinesPerPair; ++line) {
        _mm_prefetch(reinterpret_cast<const char*>(p0 + kPrefetchAhead) + line * 64, _MM_HINT_T0);
      }
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) {
        acc[0][g] = _mm256_fmadd_ps(a0, load_weights(p0 + g * kLanes), acc[0][g]);
        acc2[g] = _mm256_fmadd_ps(a1, load_weights(p0 + (G + g) * kLanes), acc2[g]);
      }
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) acc[0][g] = _mm256_add_ps(acc[0][g], acc2[g]);
  }
  for (; k < depth; ++k) {
    const W* p = panel + k * G * kLanes;
    __m256 weights[G];
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) weights[g] = load_weights(p + g * kLanes);
#pragma GCC unroll 12
    for (int m = 0; m < M; ++m) {
      const __m256 value = _mm256_broadcast_ss(a[m] + k);
#pragma GCC unroll 4
      for (int g = 0; g < G; ++g) acc[m][g] = _mm256_fmadd_ps(value, weights[g], acc[m][g]);
    }
  }
#pragma GCC unroll 12
  for (int m = 0; m < M; ++m) {
#pragma GCC unroll 4
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(out[m] + g * kLanes, acc[m][g]);
  }
}

// Any number of rows, in tiles of max_tile_rows(G).
template <typename W, int G>
VOXRT_PACKED_ISA void rows_multiply(const float* const* a, int rows, std::int64_t depth,
                                    const W* panel, const float* init, float* const* out) {
  constexpr int kTile = max_tile_rows(G);
  int m = 0;
  for (; m + kTile <= rows; m += kTile) {
    tile_multiply<W, G, kTile>(a + m, depth, panel, init, out + m);
  }
  switch (rows - m) {
    case 0: break;
    case 1: tile_multiply<W, G, 1>(a + m, depth, panel, init, out + m); break;
    case 2:
      if constexpr (kTile > 2) tile_multiply<W, G, 2>(a + m, depth, panel, init, out + m);
      break;
    case 3:
      if constexpr (kTile > 3) tile_multiply<W, G, 3>(a + m, depth, panel, init, out + m);
      break;
    case 4:
      if constexpr (kTile > 4) tile_multiply<W, G, 4>(a + m, depth, panel, init, out + m);
      break;
    case 5:
      if constexpr (kTile > 5) tile_multiply<W, G, 5>(a + m, depth, panel, init, out + m);
      break;
    case 6:
      if constexpr (kTile > 6) tile_multiply<W, G, 6>(a + m, depth, panel, init, out + m);
      break;
    case 7:
      if constexpr (kTile > 7) tile_multiply<W, G, 7>(a + m, depth, panel, init, out + m);
      break;
    default: break;
  }
}

template <typename W>
VOXRT_PACKED_ISA void panels_multiply_as(int gates, const float* const* a, int rows,
                                         std::int64_t depth, const W* panel, const float* init,
                                         float* const* out) {
  switch (gates) {
    case 1: rows_multiply<W, 1>(a, rows, depth, panel, init, out); break;
    case 2: rows_multiply<W, 2>(a, rows, depth, panel, init, out); break;
    case 3: rows_multiply<W, 3>(a, rows, depth, panel, init, out); break;
    default: rows_multiply<W, 4>(a, rows, depth, panel, init, out); break;
  }
}

// out[m] = a[m] . (block `block` of `panels`), every gate of the panels, for `rows` rows; INT8
// panels read the rows as `quantized` holds them instead.
VOXRT_PACKED_ISA void panels_multiply(const PackedPanels& panels, std::int64_t block,
                                      const float* const* a, const QuantizedRows& quantized,
                                      int rows, float* const* out) {
  if (panels.int8()) {
    panels_multiply_int8(panels, block, quantized, rows, out);
  } else if (panels.half()) {
    panels_multiply_as(panels.gates, a, rows, panels.depth, panels.panel<std::uint16_t>(block),
                       nullptr, out);
  } else {
    panels_multiply_as(panels.gates, a, rows, panels.depth, panels.panel<float>(block), nullptr,
                       out);
  }
}

VOXRT_AVX2 inline __m256 clip256(const RecurrentSpec& spec, __m256 x) {
  if (!spec.has_clip) return x;
  return _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-spec.clip)), _mm256_set1_ps(spec.clip));
}

// Input projection plus recurrent term of one gate of a unit block.
VOXRT_AVX2 inline __m256 gate_sum(const float* projection, const float* recurrent, int gate) {
  return _mm256_add_ps(_mm256_loadu_ps(projection + gate * kLanes),
                       _mm256_loadu_ps(recurrent + gate * kLanes));
}

// Writes the first `count` lanes of v to out (count < 8 only in the last unit block).
VOXRT_AVX2 inline void store_lanes(float* out, __m256 v, std::int64_t count) {
  if (count == kLanes) {
    _mm256_storeu_ps(out, v);
    return;
  }
  alignas(32) float lanes[kLanes];
  _mm256_store_ps(lanes, v);
  std::memcpy(out, lanes, static_cast<std::size_t>(count) * sizeof(float));
}

// Everything the threads of one call share, per direction.
struct DirectionScratch {
  std::unique_ptr<float[]> projection;  // [rows][blocks][gates][8]
  std::unique_ptr<float[]> h;           // [2][batch][blocks*8], double-buffered
  std::unique_ptr<float[]> c;           // [batch][blocks*8] (LSTM)
  std::unique_ptr<float[]> reset_h;     // [batch][blocks*8] (GRU without linear_before_reset)
  std::unique_ptr<float[]> z_keep;      // [batch][blocks*8] (GRU without linear_before_reset)
  std::unique_ptr<StepSchedule> schedule;
};

// A oneDNN matmul for projection columns of blocks [block_begin, block_end) and `rows` rows,
// with its slice of W reordered into the layout the primitive wants.
struct ProjectionPrimitive {
  dnnl::matmul primitive;
  dnnl::memory::desc src_md, dst_md, bias_md;
  dnnl::memory weights;
  std::size_t scratchpad_bytes = 0;
};

class ProjectionCache {
 public:
  std::shared_ptr<const ProjectionPrimitive> get(const RecurrentSpec& spec,
                                                 const PackedDirection& weights, int d,
                                                 std::int64_t blocks, std::int64_t rows,
                                                 std::int64_t block_begin,
                                                 std::int64_t block_end) const {
    using dnnl::memory;
    const std::array<std::int64_t, 4> key{d, rows, block_begin, block_end};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const dnnl::engine& engine = dense::onednn_engine();
    const std::int64_t row_stride = blocks * spec.gates * kLanes;
    const std::int64_t col_begin = block_begin * spec.gates * kLanes;
    const std::int64_t cols = (block_end - block_begin) * spec.gates * kLanes;
    auto made = std::make_shared<ProjectionPrimitive>();
    made->src_md = memory::desc({rows, spec.input_size}, memory::data_type::f32,
                                memory::dims{spec.input_size, 1});
    made->dst_md = memory::desc({rows, cols}, memory::data_type::f32, memory::dims{row_stride, 1});
    made->bias_md = memory::desc({1, cols}, memory::data_type::f32, memory::format_tag::ab);
    const memory::desc user_weights_md({spec.input_size, cols}, memory::data_type::f32,
                                       memory::dims{row_stride, 1});
    const memory::desc weights_any({spec.input_size, cols}, memory::data_type::f32,
                                   memory::format_tag::any);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dense::set_onednn_threads(1);
    dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(made->src_md, weights_any, made->bias_md, made->dst_md), attr, engine);
    made->primitive = dnnl::matmul(pd);
    made->scratchpad_bytes = pd.scratchpad_desc().get_size();
    made->weights = weights_.get(
        pd.weights_desc(),
        memory(user_weights_md, engine, const_cast<float*>(weights.w_kn.data<float>()) + col_begin),
        {d, block_begin, block_end});
    cache_.emplace(key, made);
    return made;
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::array<std::int64_t, 4>, std::shared_ptr<const ProjectionPrimitive>> cache_;
  // W's slices {direction, block_begin, block_end}, shared by every row count's primitive.
  mutable dense::ReorderedWeights weights_;
};

struct CallPlan {
  const RecurrentSpec* spec;
  const RecurrentIo* io;
  const PackedWeights* weights;
  LayoutStrides strides;
  std::int64_t blocks, padded_hidden, max_length;
  std::vector<DirectionScratch>* scratch;
  const ProjectionCache* projections;  // null: OpenBLAS (W known only at run time)
  // INT8 weights: X's rows quantized with the calibrated input quantization (W's padded depth
  // bytes each), for the INT8 projection.
  const std::uint8_t* x_int8 = nullptr;
};

// Projection columns [block_begin, block_end) * gates * 8 of direction d, all rows:
// X . W^T + bias, straight into the projection layout.
void project_inputs(const CallPlan& plan, int d, std::int64_t block_begin, std::int64_t block_end) {
  if (block_end <= block_begin) return;
  const RecurrentSpec& spec = *plan.spec;
  const PackedDirection& weights = plan.weights->directions[static_cast<std::size_t>(d)];
  const std::int64_t rows = plan.io->seq_length * plan.io->batch;
  const std::int64_t row_stride = plan.blocks * spec.gates * kLanes;
  const std::int64_t col_begin = block_begin * spec.gates * kLanes;
  const std::int64_t cols = (block_end - block_begin) * spec.gates * kLanes;
  float* projection = (*plan.scratch)[static_cast<std::size_t>(d)].projection.get();
  const float* bias = weights.projection_bias.data() + col_begin;
  if (rows == 0) return;
  if (weights.w_int8) {
    const quantized::PackedInt8Weights& w = *weights.w_int8;
    quantized::int8_gemm_vnni(plan.x_int8, w.padded_depth(), rows, w, weights.w_int8_epilogue,
                              block_begin * spec.gates, block_end * spec.gates, projection,
                              row_stride);
    return;
  }
  if (plan.projections && spec.input_size > 0) {
    try {
      using dnnl::memory;
      // oneDNN's f32 matmul without AVX-512 (gemm:jit) keeps W in plain layout and, for a W
      // larger than the caches, reads it again for every block of rows: a BiLSTM layer's
      // [100 x 2048] x [2048 x 4096] ran at 29 GFLOP/s on an AVX2 EPYC, against 80 GFLOP/s in
      // slices of about 1 MiB of W each (which stay in L2 across the rows).
      const std::int64_t block_bytes =
          spec.input_size * spec.gates * kLanes * static_cast<std::int64_t>(sizeof(float));
      const std::int64_t slice_blocks =
          std::max<std::int64_t>(1, kProjectionSliceBytes / block_bytes);
      for (std::int64_t begin = block_begin; begin < block_end; begin += slice_blocks) {
        const std::int64_t end = std::min(block_end, begin + slice_blocks);
        std::shared_ptr<const ProjectionPrimitive> mm =
            plan.projections->get(spec, weights, d, plan.blocks, rows, begin, end);
        const std::int64_t offset = begin * spec.gates * kLanes;
        dense::ArgumentMap& args = dense::thread_arguments(mm->primitive);
        dense::bind_argument(args, DNNL_ARG_SRC, mm->src_md, plan.io->x->data<float>());
        args[DNNL_ARG_WEIGHTS] = mm->weights;
        dense::bind_argument(args, DNNL_ARG_BIAS, mm->bias_md,
                             weights.projection_bias.data() + offset);
        dense::bind_argument(args, DNNL_ARG_DST, mm->dst_md, projection + offset);
        dense::execute_primitive(mm->primitive, args, mm->scratchpad_bytes, 1);
      }
      return;
    } catch (const dnnl::error&) {
      // oneDNN could not make or run this shape: OpenBLAS below computes the same product.
    }
  }
  for (std::int64_t row = 0; row < rows; ++row) {
    std::memcpy(projection + row * row_stride + col_begin, bias,
                static_cast<std::size_t>(cols) * sizeof(float));
  }
  if (spec.input_size == 0) return;
  keep_openblas_single_threaded();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
              static_cast<int>(cols), static_cast<int>(spec.input_size), 1.0f,
              plan.io->x->data<float>(), static_cast<int>(spec.input_size),
              weights.w_kn.data<float>() + col_begin, static_cast<int>(row_stride), 1.0f,
              projection + col_begin, static_cast<int>(row_stride));
}

// One thread's part of the recurrence of direction d: it claims unit blocks phase by phase
// (its own range first) until the sequence is done, then writes the final states of its range.
VOXRT_PACKED_ISA void run_recurrence(const CallPlan& plan, int d, int owner) {
  const RecurrentSpec& spec = *plan.spec;
  const RecurrentIo& io = *plan.io;
  const PackedDirection& weights = plan.weights->directions[static_cast<std::size_t>(d)];
  DirectionScratch& scratch = (*plan.scratch)[static_cast<std::size_t>(d)];
  StepSchedule& schedule = *scratch.schedule;
  const std::int64_t batch = io.batch, padded = plan.padded_hidden, hidden = spec.hidden_size;
  const std::int64_t row_stride = plan.blocks * spec.gates * kLanes;
  const int gates = spec.gates;
  const bool split_candidate = spec.cell == CellKind::kGru && !spec.linear_before_reset;
  const int phases_per_step = split_candidate ? 2 : 1;
  const Activation& f = spec.activation(d, 0);
  const Activation& g = spec.activation(d, spec.cell == CellKind::kRnn ? 0 : 1);
  const Activation& h_act = spec.activation(d, spec.cell == CellKind::kLstm ? 2 : 0);
  const bool reverse = spec.is_reverse(d);

  std::vector<const float*> a(static_cast<std::size_t>(batch));
  std::vector<float*> out(static_cast<std::size_t>(batch));
  std::vector<std::int64_t> active, times, finished;
  QuantizedRows quantized_rows;  // INT8 panels: this phase's rows, quantized
  // Recurrent pre-activations of the active rows for one block: [batch][gates][8].
  auto acc = std::make_unique<float[]>(static_cast<std::size_t>(batch * gates * kLanes));
  float* y = io.y ? io.y->data<float>() : nullptr;
  const float* projection = scratch.projection.get();
  float* z_keep = scratch.z_keep.get();

  for (std::int64_t step = 0; step < plan.max_length; ++step) {
    const int current = static_cast<int>(step & 1);
    const float* h_prev = scratch.h.get() + current * batch * padded;
    float* h_next = scratch.h.get() + (1 - current) * batch * padded;
    active.clear();
    times.clear();
    finished.clear();
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::int64_t length = io.lengths[static_cast<std::size_t>(b)];
      if (step < length) {
        active.push_back(b);
        times.push_back(reverse ? length - 1 - step : step);
      } else {
        finished.push_back(b);
      }
    }
    const int rows = static_cast<int>(active.size());
    const bool backwards = (step & 1) != 0;
    if (weights.r.int8() && rows > 0) {
      // Every thread quantizes all rows itself (a few hundred values): no hand-off needed.
      for (int m = 0; m < rows; ++m) a[m] = h_prev + active[m] * padded;
      quantize_state_rows(a.data(), rows, hidden, weights.r.quads() * 4, quantized_rows);
    }

    // Phase 1: every gate (z and r only for GRU without linear_before_reset).
    const std::int64_t phase = step * phases_per_step;
    // Blocks done are published once, when this thread finds nothing left to claim: one shared
    // counter update per thread and step instead of one per block (each bounced the counter's
    // cache line between the cores; a preempted thread's in-flight block is waited for either way).
    std::int64_t completed = 0;
    for (std::optional<std::int64_t> next; (next = schedule.claim(owner, phase, backwards));
         ++completed) {
      const std::int64_t block = *next;
      const std::int64_t unit0 = block * kLanes;
      const std::int64_t count = std::min<std::int64_t>(kLanes, hidden - unit0);
      // Finished entries carry their state forward into the other buffer.
      for (std::int64_t b : finished) {
        std::memcpy(h_next + b * padded + unit0, h_prev + b * padded + unit0,
                    static_cast<std::size_t>(kLanes) * sizeof(float));
      }
      if (rows == 0) continue;
      for (int m = 0; m < rows; ++m) {
        a[m] = h_prev + active[m] * padded;
        out[m] = acc.get() + m * gates * kLanes;
      }
      panels_multiply(weights.r, block, a.data(), quantized_rows, rows, out.data());
      for (int m = 0; m < rows; ++m) {
        const std::int64_t b = active[m];
        const float* xp =
            projection + plan.strides.x_row(times[m], b) * row_stride + block * gates * kLanes;
        const float* rec = out[m];
        const __m256 h_old = _mm256_loadu_ps(h_prev + b * padded + unit0);
        __m256 h_new = _mm256_setzero_ps();
        switch (spec.cell) {
          case CellKind::kRnn:
            h_new = apply_activation256(f, clip256(spec, gate_sum(xp, rec, 0)));
            break;
          case CellKind::kGru: {
            const __m256 z = apply_activation256(f, clip256(spec, gate_sum(xp, rec, 0)));
            const __m256 r = apply_activation256(f, clip256(spec, gate_sum(xp, rec, 1)));
            if (split_candidate) {
              _mm256_storeu_ps(z_keep + b * padded + unit0, z);
              _mm256_storeu_ps(scratch.reset_h.get() + b * padded + unit0, _mm256_mul_ps(r, h_old));
              continue;
            }
            const __m256 rec_h =
                _mm256_add_ps(_mm256_loadu_ps(rec + 2 * kLanes),
                              _mm256_loadu_ps(weights.candidate_r_bias.data() + block * kLanes));
            const __m256 candidate = apply_activation256(
                g, clip256(spec, _mm256_fmadd_ps(r, rec_h, _mm256_loadu_ps(xp + 2 * kLanes))));
            // (1 - z) * candidate + z * h_old = candidate + z * (h_old - candidate)
            h_new = _mm256_fmadd_ps(z, _mm256_sub_ps(h_old, candidate), candidate);
            break;
          }
          case CellKind::kLstm: {
            const float* peep = weights.peephole.data() + block * 3 * kLanes;
            float* c_ptr = scratch.c.get() + b * padded + unit0;
            const __m256 c_old = _mm256_loadu_ps(c_ptr);
            const __m256 i_gate = apply_activation256(
                f,
                clip256(spec, _mm256_fmadd_ps(_mm256_loadu_ps(peep), c_old, gate_sum(xp, rec, 0))));
            const __m256 f_gate =
                spec.input_forget
                    ? _mm256_sub_ps(_mm256_set1_ps(1.0f), i_gate)
                    : apply_activation256(
                          f, clip256(spec, _mm256_fmadd_ps(_mm256_loadu_ps(peep + 2 * kLanes),
                                                           c_old, gate_sum(xp, rec, 2))));
            const __m256 c_gate = apply_activation256(g, clip256(spec, gate_sum(xp, rec, 3)));
            const __m256 c_new = _mm256_fmadd_ps(f_gate, c_old, _mm256_mul_ps(i_gate, c_gate));
            const __m256 o_gate =
                apply_activation256(f, clip256(spec, _mm256_fmadd_ps(_mm256_loadu_ps(peep + kLanes),
                                                                     c_new, gate_sum(xp, rec, 1))));
            _mm256_storeu_ps(c_ptr, c_new);
            h_new = _mm256_mul_ps(o_gate, apply_activation256(h_act, c_new));
            break;
          }
        }
        _mm256_storeu_ps(h_next + b * padded + unit0, h_new);
        if (y) store_lanes(y + plan.strides.y_offset(times[m], d, b) + unit0, h_new, count);
      }
    }
    schedule.complete(phase, completed);
    schedule.wait_phase(phase);

    if (split_candidate) {
      // Phase 2 of GRU (linear_before_reset = 0): candidate from R_h . (r (.) h) of all units.
      const std::int64_t phase2 = phase + 1;
      for (int m = 0; m < rows; ++m) {
        a[m] = scratch.reset_h.get() + active[m] * padded;
        out[m] = acc.get() + m * gates * kLanes;
      }
      if (weights.r_candidate.int8() && rows > 0) {
        quantize_state_rows(a.data(), rows, hidden, weights.r_candidate.quads() * 4,
                            quantized_rows);
      }
      std::int64_t completed2 = 0;
      for (std::optional<std::int64_t> next; (next = schedule.claim(owner, phase2, backwards));
           ++completed2) {
        if (rows == 0) continue;
        const std::int64_t block = *next;
        panels_multiply(weights.r_candidate, block, a.data(), quantized_rows, rows, out.data());
        const std::int64_t unit0 = block * kLanes;
        const std::int64_t count = std::min<std::int64_t>(kLanes, hidden - unit0);
        for (int m = 0; m < rows; ++m) {
          const std::int64_t b = active[m];
          const float* xp =
              projection + plan.strides.x_row(times[m], b) * row_stride + block * gates * kLanes;
          const __m256 candidate = apply_activation256(
              g, clip256(spec,
                         _mm256_add_ps(_mm256_loadu_ps(xp + 2 * kLanes), _mm256_loadu_ps(out[m]))));
          const __m256 z = _mm256_loadu_ps(z_keep + b * padded + unit0);
          const __m256 h_old = _mm256_loadu_ps(h_prev + b * padded + unit0);
          const __m256 h_new = _mm256_fmadd_ps(z, _mm256_sub_ps(h_old, candidate), candidate);
          _mm256_storeu_ps(h_next + b * padded + unit0, h_new);
          if (y) store_lanes(y + plan.strides.y_offset(times[m], d, b) + unit0, h_new, count);
        }
      }
      schedule.complete(phase2, completed2);
      schedule.wait_phase(phase2);
    }
  }

  // Final states of this thread's range (every phase is done: each step ended with a wait).
  const float* h_final = scratch.h.get() + (plan.max_length & 1) * batch * padded;
  const std::int64_t unit_begin = schedule.range_begin(owner) * kLanes;
  const std::int64_t unit_end = std::min(schedule.range_end(owner) * kLanes, hidden);
  if (unit_end <= unit_begin) return;
  const std::size_t bytes = static_cast<std::size_t>(unit_end - unit_begin) * sizeof(float);
  for (std::int64_t b = 0; b < batch; ++b) {
    if (io.y_h) {
      std::memcpy(io.y_h->data<float>() + plan.strides.state_offset(d, b) + unit_begin,
                  h_final + b * padded + unit_begin, bytes);
    }
    if (io.y_c) {
      std::memcpy(io.y_c->data<float>() + plan.strides.state_offset(d, b) + unit_begin,
                  scratch.c.get() + b * padded + unit_begin, bytes);
    }
  }
}

class PackedKernel final : public Kernel {
 public:
  PackedKernel(RecurrentSpec spec, std::optional<PackedWeights> weights, PackedThreading threading,
               RecurrentWeightStorage r_storage,
               std::optional<quantized::ActivationQuantization> input_quantization)
      : spec_(std::move(spec)),
        weights_(std::move(weights)),
        threading_(threading),
        r_storage_(r_storage),
        input_quantization_(input_quantization) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    VOXRT_ASSIGN_OR_RETURN(RecurrentIo io, bind_recurrent_io(spec_, inputs, outputs));
    std::optional<PackedWeights> call_weights;
    if (!weights_) call_weights = pack_weights(spec_, *io.w, *io.r, io.b, io.p, r_storage_);
    const PackedWeights& weights = weights_ ? *weights_ : *call_weights;
    zero_y_past_lengths(spec_, io);

    CallPlan plan{&spec_,
                  &io,
                  &weights,
                  layout_strides(spec_, io),
                  weights.blocks,
                  weights.blocks * kUnitBlock,
                  0,
                  nullptr,
                  weights_ ? &projections_ : nullptr};
    plan.max_length = *std::max_element(io.lengths.begin(), io.lengths.end());
    if (io.batch == 0) return Status::ok();
    std::vector<std::uint8_t> x_int8;
    if (!weights.directions.empty() && weights.directions.front().w_int8) {
      const std::int64_t lda = weights.directions.front().w_int8->padded_depth();
      const std::int64_t x_rows = io.seq_length * io.batch;
      x_int8.resize(static_cast<std::size_t>(x_rows * lda));
      quantized::quantize_rows_padded(io.x->data<float>(), x_rows, spec_.input_size,
                                      spec_.input_size, *input_quantization_, lda, x_int8.data());
      plan.x_int8 = x_int8.data();
    }

    // Thread plan: two groups (one per direction) when there are threads for both, else one
    // group that walks the directions in turn. Within a group, unit blocks are split evenly.
    const int pool_threads =
        threading_ == PackedThreading::kSingleThread ? 1 : std::max(context.pool->threads(), 1);
    // In turn, every worker takes part in each direction, so no more workers than blocks.
    const bool in_turn = threading_ == PackedThreading::kDirectionsInTurn;
    const std::int64_t max_workers = (in_turn ? 1 : spec_.num_directions) * plan.blocks;
    const int workers = static_cast<int>(std::min<std::int64_t>(pool_threads, max_workers));
    const int groups = spec_.num_directions == 2 && workers >= 2 && !in_turn ? 2 : 1;
    auto group_of = [&](int worker) { return groups == 2 && worker >= workers / 2 ? 1 : 0; };
    auto group_first = [&](int group) { return workers * group / groups; };
    auto group_members = [&](int group) {
      return workers * (group + 1) / groups - workers * group / groups;
    };

    std::vector<DirectionScratch> scratch(static_cast<std::size_t>(spec_.num_directions));
    plan.scratch = &scratch;
    const std::int64_t state_floats = io.batch * plan.padded_hidden;
    const LayoutStrides& strides = plan.strides;
    for (int d = 0; d < spec_.num_directions; ++d) {
      DirectionScratch& s = scratch[static_cast<std::size_t>(d)];
      s.projection = std::make_unique_for_overwrite<float[]>(
          static_cast<std::size_t>(io.seq_length * io.batch * plan.blocks * spec_.gates * kLanes));
      s.h = std::make_unique<float[]>(static_cast<std::size_t>(2 * state_floats));
      s.c = std::make_unique<float[]>(static_cast<std::size_t>(state_floats));
      if (spec_.cell == CellKind::kGru) {
        s.reset_h = std::make_unique<float[]>(static_cast<std::size_t>(state_floats));
        s.z_keep = std::make_unique<float[]>(static_cast<std::size_t>(state_floats));
      }
      s.schedule = std::make_unique<StepSchedule>(
          plan.blocks, std::min<std::int64_t>(plan.blocks, group_members(groups == 2 ? d : 0)));
      for (std::int64_t b = 0; b < io.batch; ++b) {
        const std::size_t bytes = static_cast<std::size_t>(spec_.hidden_size) * sizeof(float);
        if (io.initial_h) {
          std::memcpy(s.h.get() + b * plan.padded_hidden,
                      io.initial_h->data<float>() + strides.state_offset(d, b), bytes);
        }
        if (io.initial_c) {
          std::memcpy(s.c.get() + b * plan.padded_hidden,
                      io.initial_c->data<float>() + strides.state_offset(d, b), bytes);
        }
      }
    }

    auto work = [&](int worker) {
      const int group = group_of(worker);
      const int rank = worker - group_first(group);
      for (int d = 0; d < spec_.num_directions; ++d) {
        if (groups == 2 && d != group) continue;
        const StepSchedule& schedule = *scratch[static_cast<std::size_t>(d)].schedule;
        project_inputs(plan, d, schedule.range_begin(rank), schedule.range_end(rank));
      }
    };
    auto recur = [&](int worker) {
      const int group = group_of(worker);
      const int rank = worker - group_first(group);
      for (int d = 0; d < spec_.num_directions; ++d) {
        if (groups == 2 && d != group) continue;
        run_recurrence(plan, d, rank);
      }
    };
    if (workers == 1) {
      work(0);
      recur(0);
    } else {
      // The projection of every block must be complete before any thread may steal it, hence
      // two passes. One range per worker (count == workers <= threads).
      auto each = [&](auto& fn) {
        context.pool->parallel_for(workers, 1, [&](std::int64_t begin, std::int64_t end) {
          for (std::int64_t w = begin; w < end; ++w) fn(static_cast<int>(w));
        });
      };
      each(work);
      each(recur);
    }
    return Status::ok();
  }

 private:
  RecurrentSpec spec_;
  std::optional<PackedWeights> weights_;
  PackedThreading threading_;
  RecurrentWeightStorage r_storage_;
  std::optional<quantized::ActivationQuantization> input_quantization_;  // INT8 weights only
  ProjectionCache projections_;  // used only with constant weights_
};

bool is_constant_input(const ir::Node& node, std::size_t index) {
  const ir::Value* value = node.input(index);
  return !value || value->is_constant();
}

}  // namespace

bool packed_available() {
  static const bool available = [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
    return cpu_has_avx2_fma() && f16c;
  }();
  return available;
}

Expected<std::unique_ptr<Kernel>> make_packed_kernel(const ir::Node& node,
                                                     const RecurrentSpec& spec,
                                                     PackedThreading threading,
                                                     RecurrentWeightStorage r_storage) {
  if (!packed_available()) {
    return unsupported(node.describe(), ": the packed tactics need a CPU with AVX2, FMA and F16C");
  }
  std::optional<PackedWeights> weights;
  const std::size_t p_index = 7;
  const bool constant_weights = is_constant_input(node, 1) && is_constant_input(node, 2) &&
                                is_constant_input(node, 3) &&
                                (spec.cell != CellKind::kLstm || is_constant_input(node, p_index));
  std::optional<quantized::ActivationQuantization> input_quantization;
  if (r_storage == RecurrentWeightStorage::kInt8) {
    if (!constant_weights || !quantized::vnni_available()) {
      return unsupported(node.describe(), ": the int8 packed tactics need constant W, R, B ",
                         "(and P) and a CPU with AVX-512 VNNI");
    }
    VOXRT_ASSIGN_OR_RETURN(input_quantization, quantized::read_input_quantization(node));
  }
  if (constant_weights) {
    const ir::Value* b = node.input(3);
    const ir::Value* p = spec.cell == CellKind::kLstm ? node.input(p_index) : nullptr;
    weights = pack_weights(spec, *node.input(1)->constant, *node.input(2)->constant,
                           b ? &*b->constant : nullptr, p ? &*p->constant : nullptr, r_storage,
                           input_quantization ? &*input_quantization : nullptr);
  }
  return std::unique_ptr<Kernel>(std::make_unique<PackedKernel>(spec, std::move(weights), threading,
                                                                r_storage, input_quantization));
}

}  // namespace voxrt::backends::cpu::recurrent
