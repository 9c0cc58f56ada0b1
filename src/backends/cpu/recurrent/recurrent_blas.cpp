// Tactic "blas": OpenBLAS sgemm for the input projection of all time steps at once
// ([seq*batch, input] x [input, gates*hidden]) and one sgemm per step for the recurrence
// ([batch, hidden] x [hidden, gates*hidden]), with the gate nonlinearities fused into flat loops
// over the hidden units (AVX2 when the CPU has it). Weights are transposed to [k, n] once.
//
// Threads: OpenBLAS is told to stay single-threaded (it cannot honour a per-call thread count
// and its own pool would fight ours); parallelism comes from KernelContext::pool instead: the
// two directions of a bidirectional layer run side by side, and a single direction's projection
// is split by columns.
#include <cblas.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

#include "backends/cpu/recurrent/recurrent_kernels.h"
#include "backends/cpu/recurrent/recurrent_vector_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::recurrent {
namespace {

void keep_openblas_single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

struct BlasDirection {
  std::vector<float> w_t;               // [input, gates*hidden]
  std::vector<float> r_t;               // [hidden, r_gates*hidden]
  std::vector<float> r_candidate;       // GRU without linear_before_reset: [hidden, hidden]
  std::vector<float> projection_bias;   // [gates*hidden]
  std::vector<float> candidate_r_bias;  // [hidden] (GRU with linear_before_reset)
  std::vector<float> peephole;          // [3*hidden]
  int r_gates = 0;
};

// rows [first_row, first_row + count) of a [rows, cols] matrix, transposed to [cols, count].
std::vector<float> transpose_rows(const float* matrix, std::int64_t first_row, std::int64_t count,
                                  std::int64_t cols) {
  std::vector<float> out(static_cast<std::size_t>(count * cols));
  for (std::int64_t r = 0; r < count; ++r) {
    for (std::int64_t c = 0; c < cols; ++c) out[c * count + r] = matrix[(first_row + r) * cols + c];
  }
  return out;
}

std::vector<BlasDirection> prepare_weights(const RecurrentSpec& spec, const Tensor& w,
                                           const Tensor& r, const Tensor* b, const Tensor* p) {
  const std::int64_t hidden = spec.hidden_size, input = spec.input_size;
  const std::int64_t gate_rows = spec.gates * hidden;
  const bool split_candidate = spec.cell == CellKind::kGru && !spec.linear_before_reset;
  std::vector<BlasDirection> directions;
  for (int d = 0; d < spec.num_directions; ++d) {
    BlasDirection dir;
    const float* w_d = w.data<float>() + d * gate_rows * input;
    const float* r_d = r.data<float>() + d * gate_rows * hidden;
    dir.w_t = transpose_rows(w_d, 0, gate_rows, input);
    dir.r_gates = split_candidate ? 2 : spec.gates;
    dir.r_t = transpose_rows(r_d, 0, dir.r_gates * hidden, hidden);
    if (split_candidate) dir.r_candidate = transpose_rows(r_d, 2 * hidden, hidden, hidden);
    dir.projection_bias.assign(static_cast<std::size_t>(gate_rows), 0.0f);
    dir.candidate_r_bias.assign(static_cast<std::size_t>(hidden), 0.0f);
    dir.peephole.assign(static_cast<std::size_t>(3 * hidden), 0.0f);
    if (b) {
      const float* wb = b->data<float>() + d * 2 * gate_rows;
      for (std::int64_t row = 0; row < gate_rows; ++row) {
        const bool inside =
            spec.cell == CellKind::kGru && spec.linear_before_reset && row >= 2 * hidden;
        dir.projection_bias[row] = wb[row] + (inside ? 0.0f : wb[gate_rows + row]);
        if (inside) dir.candidate_r_bias[row - 2 * hidden] = wb[gate_rows + row];
      }
    }
    if (p)
      std::memcpy(dir.peephole.data(), p->data<float>() + d * 3 * hidden,
                  dir.peephole.size() * sizeof(float));
    directions.push_back(std::move(dir));
  }
  return directions;
}

void activate(const RecurrentSpec& spec, const Activation& activation, float* data,
              std::int64_t count, bool avx2) {
  if (avx2) {
    activate_span_avx2(spec, activation, data, count);
    return;
  }
  for (std::int64_t i = 0; i < count; ++i) data[i] = activation.apply(spec.clip_value(data[i]));
}

class BlasKernel final : public Kernel {
 public:
  BlasKernel(RecurrentSpec spec, std::optional<std::vector<BlasDirection>> weights)
      : spec_(std::move(spec)), weights_(std::move(weights)), avx2_(packed_available()) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    VOXRT_ASSIGN_OR_RETURN(RecurrentIo io, bind_recurrent_io(spec_, inputs, outputs));
    std::optional<std::vector<BlasDirection>> call_weights;
    if (!weights_) call_weights = prepare_weights(spec_, *io.w, *io.r, io.b, io.p);
    const std::vector<BlasDirection>& weights = weights_ ? *weights_ : *call_weights;
    zero_y_past_lengths(spec_, io);
    if (io.batch == 0) return Status::ok();

    const int threads = std::max(context.pool->threads(), 1);
    const std::int64_t rows = io.seq_length * io.batch;
    const std::int64_t gate_cols = spec_.gates * spec_.hidden_size;
    std::vector<std::unique_ptr<float[]>> projections(
        static_cast<std::size_t>(spec_.num_directions));
    for (auto& projection : projections) {
      projection =
          std::make_unique_for_overwrite<float[]>(static_cast<std::size_t>(rows * gate_cols));
    }
    auto project = [&](int d, std::int64_t col_begin, std::int64_t col_end) {
      if (col_end <= col_begin || rows == 0) return;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                  static_cast<int>(col_end - col_begin), static_cast<int>(spec_.input_size), 1.0f,
                  io.x->data<float>(), static_cast<int>(spec_.input_size),
                  weights[static_cast<std::size_t>(d)].w_t.data() + col_begin,
                  static_cast<int>(gate_cols), 0.0f,
                  projections[static_cast<std::size_t>(d)].get() + col_begin,
                  static_cast<int>(gate_cols));
    };
    if (spec_.num_directions == 2 && threads >= 2) {
      context.pool->parallel_for(2, 1, [&](std::int64_t begin, std::int64_t end) {
        for (std::int64_t d = begin; d < end; ++d) {
          project(static_cast<int>(d), 0, gate_cols);
          run_direction(io, weights[static_cast<std::size_t>(d)],
                        projections[static_cast<std::size_t>(d)].get(), static_cast<int>(d));
        }
      });
      return Status::ok();
    }
    for (int d = 0; d < spec_.num_directions; ++d) {
      // Column split on 8-float boundaries keeps each thread's slice cache-line friendly.
      const std::int64_t chunks = (gate_cols + 7) / 8;
      context.pool->parallel_for(chunks, std::max<std::int64_t>(1, chunks / threads),
                                 [&](std::int64_t begin, std::int64_t end) {
                                   project(d, begin * 8, std::min(end * 8, gate_cols));
                                 });
      run_direction(io, weights[static_cast<std::size_t>(d)],
                    projections[static_cast<std::size_t>(d)].get(), d);
    }
    return Status::ok();
  }

 private:
  void run_direction(const RecurrentIo& io, const BlasDirection& weights, const float* projection,
                     int d) const {
    const RecurrentSpec& spec = spec_;
    const LayoutStrides strides = layout_strides(spec, io);
    const std::int64_t batch = io.batch, hidden = spec.hidden_size;
    const std::int64_t gate_cols = spec.gates * hidden;
    const std::int64_t r_cols = weights.r_gates * hidden;
    const bool split_candidate = spec.cell == CellKind::kGru && !spec.linear_before_reset;
    const Activation& f = spec.activation(d, 0);
    const Activation& g = spec.activation(d, spec.cell == CellKind::kRnn ? 0 : 1);
    const Activation& h_act = spec.activation(d, spec.cell == CellKind::kLstm ? 2 : 0);
    const bool reverse = spec.is_reverse(d);
    const std::size_t state = static_cast<std::size_t>(batch * hidden);

    std::vector<float> h(state, 0.0f), h_next(state), c(state, 0.0f);
    std::vector<float> recurrent(static_cast<std::size_t>(batch * r_cols));
    std::vector<float> gates(static_cast<std::size_t>(gate_cols));
    std::vector<float> reset_h, candidate_rec;
    if (split_candidate) {
      reset_h.assign(state, 0.0f);
      candidate_rec.resize(state);
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::size_t bytes = static_cast<std::size_t>(hidden) * sizeof(float);
      if (io.initial_h)
        std::memcpy(&h[b * hidden], io.initial_h->data<float>() + strides.state_offset(d, b),
                    bytes);
      if (io.initial_c)
        std::memcpy(&c[b * hidden], io.initial_c->data<float>() + strides.state_offset(d, b),
                    bytes);
    }
    const std::int64_t max_length = *std::max_element(io.lengths.begin(), io.lengths.end());
    for (std::int64_t step = 0; step < max_length; ++step) {
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(batch),
                  static_cast<int>(r_cols), static_cast<int>(hidden), 1.0f, h.data(),
                  static_cast<int>(hidden), weights.r_t.data(), static_cast<int>(r_cols), 0.0f,
                  recurrent.data(), static_cast<int>(r_cols));
      if (split_candidate) {
        // z and r first (kept in `gates`), r (.) h for every row, then one more sgemm.
        for (std::int64_t b = 0; b < batch; ++b) {
          const std::int64_t length = io.lengths[static_cast<std::size_t>(b)];
          if (step >= length) continue;
          const std::int64_t t = reverse ? length - 1 - step : step;
          const float* xp = projection + strides.x_row(t, b) * gate_cols;
          float* rec = &recurrent[b * r_cols];
          for (std::int64_t j = 0; j < 2 * hidden; ++j) {
            rec[j] += xp[j] + weights.projection_bias[j];
          }
          activate(spec, f, rec, 2 * hidden, avx2_);
          for (std::int64_t j = 0; j < hidden; ++j)
            reset_h[b * hidden + j] = rec[hidden + j] * h[b * hidden + j];
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(batch),
                    static_cast<int>(hidden), static_cast<int>(hidden), 1.0f, reset_h.data(),
                    static_cast<int>(hidden), weights.r_candidate.data(), static_cast<int>(hidden),
                    0.0f, candidate_rec.data(), static_cast<int>(hidden));
      }
      for (std::int64_t b = 0; b < batch; ++b) {
        const std::int64_t length = io.lengths[static_cast<std::size_t>(b)];
        float* h_out = &h_next[b * hidden];
        const float* h_in = &h[b * hidden];
        if (step >= length) {
          std::memcpy(h_out, h_in, static_cast<std::size_t>(hidden) * sizeof(float));
          continue;
        }
        const std::int64_t t = reverse ? length - 1 - step : step;
        const float* xp = projection + strides.x_row(t, b) * gate_cols;
        const float* rec = &recurrent[b * r_cols];
        const float* bias = weights.projection_bias.data();
        float* gate = gates.data();
        switch (spec.cell) {
          case CellKind::kRnn:
            for (std::int64_t j = 0; j < hidden; ++j) h_out[j] = xp[j] + bias[j] + rec[j];
            activate(spec, f, h_out, hidden, avx2_);
            break;
          case CellKind::kGru: {
            float* candidate = gate + 2 * hidden;
            const float* z;
            if (split_candidate) {
              z = rec;  // z, r were activated in place above
              const float* cr = &candidate_rec[b * hidden];
              for (std::int64_t j = 0; j < hidden; ++j) {
                candidate[j] = xp[2 * hidden + j] + bias[2 * hidden + j] + cr[j];
              }
            } else {
              for (std::int64_t j = 0; j < 2 * hidden; ++j) gate[j] = xp[j] + bias[j] + rec[j];
              activate(spec, f, gate, 2 * hidden, avx2_);
              z = gate;
              const float* r = gate + hidden;
              const float* rb = weights.candidate_r_bias.data();
              for (std::int64_t j = 0; j < hidden; ++j) {
                candidate[j] = xp[2 * hidden + j] + bias[2 * hidden + j] +
                               r[j] * (rec[2 * hidden + j] + rb[j]);
              }
            }
            activate(spec, g, candidate, hidden, avx2_);
            for (std::int64_t j = 0; j < hidden; ++j) {
              h_out[j] = candidate[j] + z[j] * (h_in[j] - candidate[j]);
            }
            break;
          }
          case CellKind::kLstm: {
            // ONNX gate order i, o, f, c; peepholes i, o, f.
            float* c_row = &c[b * hidden];
            const float* p = weights.peephole.data();
            for (std::int64_t j = 0; j < gate_cols; ++j) gate[j] = xp[j] + bias[j] + rec[j];
            for (std::int64_t j = 0; j < hidden; ++j) {
              gate[j] += p[j] * c_row[j];
              gate[2 * hidden + j] += p[2 * hidden + j] * c_row[j];
            }
            activate(spec, f, gate, hidden, avx2_);
            if (spec.input_forget) {
              for (std::int64_t j = 0; j < hidden; ++j) gate[2 * hidden + j] = 1.0f - gate[j];
            } else {
              activate(spec, f, gate + 2 * hidden, hidden, avx2_);
            }
            activate(spec, g, gate + 3 * hidden, hidden, avx2_);
            for (std::int64_t j = 0; j < hidden; ++j) {
              c_row[j] = gate[2 * hidden + j] * c_row[j] + gate[j] * gate[3 * hidden + j];
              gate[hidden + j] += p[hidden + j] * c_row[j];
              h_out[j] = c_row[j];
            }
            activate(spec, f, gate + hidden, hidden, avx2_);
            // h_act must not see the clip: it applies to gate inputs only.
            if (avx2_) {
              RecurrentSpec no_clip = spec;
              no_clip.has_clip = false;
              activate_span_avx2(no_clip, h_act, h_out, hidden);
            } else {
              for (std::int64_t j = 0; j < hidden; ++j) h_out[j] = h_act.apply(h_out[j]);
            }
            for (std::int64_t j = 0; j < hidden; ++j) h_out[j] *= gate[hidden + j];
            break;
          }
        }
        if (io.y) {
          std::memcpy(io.y->data<float>() + strides.y_offset(t, d, b), h_out,
                      static_cast<std::size_t>(hidden) * sizeof(float));
        }
      }
      h.swap(h_next);
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      const std::size_t bytes = static_cast<std::size_t>(hidden) * sizeof(float);
      if (io.y_h)
        std::memcpy(io.y_h->data<float>() + strides.state_offset(d, b), &h[b * hidden], bytes);
      if (io.y_c)
        std::memcpy(io.y_c->data<float>() + strides.state_offset(d, b), &c[b * hidden], bytes);
    }
  }

  RecurrentSpec spec_;
  std::optional<std::vector<BlasDirection>> weights_;
  bool avx2_;
};

bool constant_or_absent(const ir::Node& node, std::size_t index) {
  const ir::Value* value = node.input(index);
  return !value || value->is_constant();
}

}  // namespace

Expected<std::unique_ptr<Kernel>> make_blas_kernel(const ir::Node& node,
                                                   const RecurrentSpec& spec) {
  keep_openblas_single_threaded();
  std::optional<std::vector<BlasDirection>> weights;
  const bool lstm = spec.cell == CellKind::kLstm;
  if (constant_or_absent(node, 1) && constant_or_absent(node, 2) && constant_or_absent(node, 3) &&
      (!lstm || constant_or_absent(node, 7))) {
    const ir::Value* b = node.input(3);
    const ir::Value* p = lstm ? node.input(7) : nullptr;
    weights = prepare_weights(spec, *node.input(1)->constant, *node.input(2)->constant,
                              b ? &*b->constant : nullptr, p ? &*p->constant : nullptr);
  }
  return std::unique_ptr<Kernel>(std::make_unique<BlasKernel>(spec, std::move(weights)));
}

}  // namespace voxrt::backends::cpu::recurrent
