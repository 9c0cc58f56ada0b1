// Tactic 0: naive loops written straight from the ONNX GRU / LSTM / RNN formulas, one batch entry
// and one direction at a time. Kept forever as the oracle the other tactics are tested against.
#include <cstring>
#include <vector>

#include "backends/cpu/recurrent/recurrent_kernels.h"

namespace voxrt::backends::cpu::recurrent {
namespace {

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(RecurrentSpec spec) : spec_(std::move(spec)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    VOXRT_ASSIGN_OR_RETURN(RecurrentIo io, bind_recurrent_io(spec_, inputs, outputs));
    const LayoutStrides strides = layout_strides(spec_, io);
    if (io.y) std::memset(io.y->raw_data(), 0, io.y->size_bytes());
    for (int d = 0; d < spec_.num_directions; ++d) {
      for (std::int64_t b = 0; b < io.batch; ++b) run_sequence(io, strides, d, b);
    }
    return Status::ok();
  }

 private:
  // sum_k m[row, k] * v[k] for a row-major matrix with `cols` columns.
  static float dot_row(const float* m, std::int64_t row, std::int64_t cols, const float* v) {
    float sum = 0.0f;
    for (std::int64_t k = 0; k < cols; ++k) sum += m[row * cols + k] * v[k];
    return sum;
  }

  void run_sequence(const RecurrentIo& io, const LayoutStrides& strides, int d,
                    std::int64_t b) const {
    const std::int64_t hidden = spec_.hidden_size;
    const std::int64_t input = spec_.input_size;
    const std::int64_t gate_rows = spec_.gates * hidden;
    const float* w = io.w->data<float>() + d * gate_rows * input;
    const float* r = io.r->data<float>() + d * gate_rows * hidden;
    std::vector<float> zeros(static_cast<std::size_t>(2 * gate_rows), 0.0f);
    const float* wb = io.b ? io.b->data<float>() + d * 2 * gate_rows : zeros.data();
    const float* rb = wb + gate_rows;
    std::vector<float> p_zeros(static_cast<std::size_t>(3 * hidden), 0.0f);
    const float* p = io.p ? io.p->data<float>() + d * 3 * hidden : p_zeros.data();

    std::vector<float> h(static_cast<std::size_t>(hidden), 0.0f);
    std::vector<float> c(static_cast<std::size_t>(hidden), 0.0f);
    std::vector<float> next_h(h.size());
    std::vector<float> reset_h(h.size());
    if (io.initial_h) {
      std::memcpy(h.data(), io.initial_h->data<float>() + strides.state_offset(d, b),
                  h.size() * sizeof(float));
    }
    if (io.initial_c) {
      std::memcpy(c.data(), io.initial_c->data<float>() + strides.state_offset(d, b),
                  c.size() * sizeof(float));
    }
    const Activation& f = spec_.activation(d, 0);
    const Activation& g = spec_.activation(d, spec_.cell == CellKind::kRnn ? 0 : 1);
    const Activation& h_act = spec_.activation(d, spec_.cell == CellKind::kLstm ? 2 : 0);

    const std::int64_t length = io.lengths[static_cast<std::size_t>(b)];
    for (std::int64_t step = 0; step < length; ++step) {
      const std::int64_t t = spec_.is_reverse(d) ? length - 1 - step : step;
      const float* x = io.x->data<float>() + strides.x_row(t, b) * input;
      // pre(gate, j): the gate's input projection plus both biases.
      auto pre = [&](int gate, std::int64_t j) {
        const std::int64_t row = gate * hidden + j;
        return dot_row(w, row, input, x) + wb[row] + rb[row];
      };
      switch (spec_.cell) {
        case CellKind::kRnn:
          for (std::int64_t j = 0; j < hidden; ++j) {
            next_h[j] = f.apply(spec_.clip_value(pre(0, j) + dot_row(r, j, hidden, h.data())));
          }
          break;
        case CellKind::kGru: {
          std::vector<float> z(h.size()), reset(h.size());
          for (std::int64_t j = 0; j < hidden; ++j) {
            z[j] = f.apply(spec_.clip_value(pre(0, j) + dot_row(r, j, hidden, h.data())));
            reset[j] =
                f.apply(spec_.clip_value(pre(1, j) + dot_row(r, hidden + j, hidden, h.data())));
            reset_h[j] = reset[j] * h[j];
          }
          for (std::int64_t j = 0; j < hidden; ++j) {
            const std::int64_t row = 2 * hidden + j;
            const float wx = dot_row(w, row, input, x) + wb[row];
            float candidate_in;
            if (spec_.linear_before_reset) {
              candidate_in = wx + reset[j] * (dot_row(r, row, hidden, h.data()) + rb[row]);
            } else {
              candidate_in = wx + dot_row(r, row, hidden, reset_h.data()) + rb[row];
            }
            const float candidate = g.apply(spec_.clip_value(candidate_in));
            next_h[j] = (1.0f - z[j]) * candidate + z[j] * h[j];
          }
          break;
        }
        case CellKind::kLstm: {
          // Gate rows: i = 0, o = 1, f = 2, c = 3. Peepholes: i, o, f.
          std::vector<float> next_c(h.size());
          for (std::int64_t j = 0; j < hidden; ++j) {
            auto gate_in = [&](int gate) {
              return pre(gate, j) + dot_row(r, gate * hidden + j, hidden, h.data());
            };
            const float i_gate = f.apply(spec_.clip_value(gate_in(0) + p[j] * c[j]));
            const float f_gate =
                spec_.input_forget
                    ? 1.0f - i_gate
                    : f.apply(spec_.clip_value(gate_in(2) + p[2 * hidden + j] * c[j]));
            const float c_gate = g.apply(spec_.clip_value(gate_in(3)));
            next_c[j] = f_gate * c[j] + i_gate * c_gate;
            const float o_gate = f.apply(spec_.clip_value(gate_in(1) + p[hidden + j] * next_c[j]));
            next_h[j] = o_gate * h_act.apply(next_c[j]);
          }
          c = next_c;
          break;
        }
      }
      h = next_h;
      if (io.y) {
        std::memcpy(io.y->data<float>() + strides.y_offset(t, d, b), h.data(),
                    h.size() * sizeof(float));
      }
    }
    if (io.y_h) {
      std::memcpy(io.y_h->data<float>() + strides.state_offset(d, b), h.data(),
                  h.size() * sizeof(float));
    }
    if (io.y_c) {
      std::memcpy(io.y_c->data<float>() + strides.state_offset(d, b), c.data(),
                  c.size() * sizeof(float));
    }
  }

  RecurrentSpec spec_;
};

}  // namespace

// The reference on R rounded to FP16: what a layer marked fp16 must compute, so that even when
// the reference wins the timing (a tiny layer) the engine runs at the precision it records.
class Fp16WeightsReferenceKernel final : public Kernel {
 public:
  explicit Fp16WeightsReferenceKernel(RecurrentSpec spec) : reference_(std::move(spec)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    if (inputs.size() < 3 || !inputs[2] || inputs[2]->dtype() != DType::kF32)
      return reference_.run(inputs, outputs, context);  // it reports what is wrong
    Tensor rounded = inputs[2]->clone();
    for (float& v : rounded.span<float>()) v = half_bits_to_float(float_to_half_bits(v));
    std::vector<const Tensor*> with_rounded(inputs.begin(), inputs.end());
    with_rounded[2] = &rounded;
    return reference_.run(with_rounded, outputs, context);
  }

 private:
  ReferenceKernel reference_;
};

std::unique_ptr<Kernel> make_reference_kernel(const RecurrentSpec& spec,
                                              RecurrentWeightStorage r_storage) {
  if (r_storage == RecurrentWeightStorage::kFp16)
    return std::make_unique<Fp16WeightsReferenceKernel>(spec);
  return std::make_unique<ReferenceKernel>(spec);
}

}  // namespace voxrt::backends::cpu::recurrent
