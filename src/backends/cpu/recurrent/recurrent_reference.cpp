// Tactic 0: naive loops written straight from the ONNX GRU / LSTM / RNN formulas, one batch entry
// and one direction at a time. Kept forever as the oracle the other tactics are tested against.
#include <cstring>
#include <optional>
#include <vector>

#include "backends/cpu/recurrent/recurrent_int8_product.h"
#include "backends/cpu/recurrent/recurrent_kernels.h"

namespace voxrt::backends::cpu::recurrent {
namespace {

// x -> (q - zero point) * scale, q as the INT8 kernels quantize it.
void round_through_int8(const float* in, std::int64_t count,
                        const quantized::ActivationQuantization& q, float* out) {
  for (std::int64_t i = 0; i < count; ++i) {
    out[i] = static_cast<float>(quantized::quantize_activation(in[i], q) - q.zero_point) * q.scale;
  }
}

class ReferenceKernel final : public Kernel {
 public:
  // With `int8_input`, the operands of every product are rounded as the INT8 tactics round
  // them: X through its calibrated quantization, h (and a GRU's r (.) h) through each row's own
  // (dynamic_row_quantization); W and R come rounded by the caller.
  explicit ReferenceKernel(RecurrentSpec spec,
                           std::optional<quantized::ActivationQuantization> int8_input = {})
      : spec_(std::move(spec)), int8_input_(int8_input) {}

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

    // The operands the products read: h itself, or h rounded through INT8.
    std::vector<float> x_rounded(static_cast<std::size_t>(input)), h_operand(h.size());
    const auto operand = [&](const std::vector<float>& v) -> const float* {
      if (!int8_input_) return v.data();
      round_through_int8(v.data(), hidden, dynamic_row_quantization(v.data(), hidden),
                         h_operand.data());
      return h_operand.data();
    };

    const std::int64_t length = io.lengths[static_cast<std::size_t>(b)];
    for (std::int64_t step = 0; step < length; ++step) {
      const std::int64_t t = spec_.is_reverse(d) ? length - 1 - step : step;
      const float* x = io.x->data<float>() + strides.x_row(t, b) * input;
      if (int8_input_) {
        round_through_int8(x, input, *int8_input_, x_rounded.data());
        x = x_rounded.data();
      }
      const float* hq = operand(h);
      // pre(gate, j): the gate's input projection plus both biases.
      auto pre = [&](int gate, std::int64_t j) {
        const std::int64_t row = gate * hidden + j;
        return dot_row(w, row, input, x) + wb[row] + rb[row];
      };
      switch (spec_.cell) {
        case CellKind::kRnn:
          for (std::int64_t j = 0; j < hidden; ++j) {
            next_h[j] = f.apply(spec_.clip_value(pre(0, j) + dot_row(r, j, hidden, hq)));
          }
          break;
        case CellKind::kGru: {
          std::vector<float> z(h.size()), reset(h.size());
          for (std::int64_t j = 0; j < hidden; ++j) {
            z[j] = f.apply(spec_.clip_value(pre(0, j) + dot_row(r, j, hidden, hq)));
            reset[j] = f.apply(spec_.clip_value(pre(1, j) + dot_row(r, hidden + j, hidden, hq)));
            reset_h[j] = reset[j] * h[j];
          }
          // (h's rounded copy is used up: r (.) h may take its buffer.)
          const float* reset_hq = spec_.linear_before_reset ? nullptr : operand(reset_h);
          for (std::int64_t j = 0; j < hidden; ++j) {
            const std::int64_t row = 2 * hidden + j;
            const float wx = dot_row(w, row, input, x) + wb[row];
            float candidate_in;
            if (spec_.linear_before_reset) {
              candidate_in = wx + reset[j] * (dot_row(r, row, hidden, hq) + rb[row]);
            } else {
              candidate_in = wx + dot_row(r, row, hidden, reset_hq) + rb[row];
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
              return pre(gate, j) + dot_row(r, gate * hidden + j, hidden, hq);
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
  std::optional<quantized::ActivationQuantization> int8_input_;
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

// The reference of a layer marked int8: W and R rounded per row as the INT8 tactics store them,
// the products' operands rounded as they quantize them; everything else FP32.
class Int8WeightsReferenceKernel final : public Kernel {
 public:
  Int8WeightsReferenceKernel(RecurrentSpec spec, quantized::ActivationQuantization input)
      : reference_(std::move(spec), input) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    if (inputs.size() < 3 || !inputs[1] || !inputs[2] || inputs[1]->dtype() != DType::kF32 ||
        inputs[2]->dtype() != DType::kF32 || inputs[1]->rank() != 3 || inputs[2]->rank() != 3)
      return reference_.run(inputs, outputs, context);  // it reports what is wrong
    std::vector<const Tensor*> rounded_inputs(inputs.begin(), inputs.end());
    Tensor w = round_rows(*inputs[1]), r = round_rows(*inputs[2]);
    rounded_inputs[1] = &w;
    rounded_inputs[2] = &r;
    return reference_.run(rounded_inputs, outputs, context);
  }

 private:
  // Each row of the [D, rows, depth] matrix quantized symmetric and dequantized.
  static Tensor round_rows(const Tensor& matrix) {
    Tensor out = matrix.clone();
    const std::int64_t depth = matrix.dim(2), rows = matrix.dim(0) * matrix.dim(1);
    const quantized::RowQuantizedWeights q =
        quantized::quantize_rows(matrix.data<float>(), rows, depth, depth);
    float* values = out.data<float>();
    for (std::int64_t row = 0; row < rows; ++row) {
      for (std::int64_t k = 0; k < depth; ++k) {
        const auto i = static_cast<std::size_t>(row * depth + k);
        values[i] = q.values[i] * q.scales[static_cast<std::size_t>(row)];
      }
    }
    return out;
  }

  ReferenceKernel reference_;
};

std::unique_ptr<Kernel> make_reference_kernel(
    const RecurrentSpec& spec, RecurrentWeightStorage r_storage,
    std::optional<quantized::ActivationQuantization> int8_input) {
  if (r_storage == RecurrentWeightStorage::kFp16)
    return std::make_unique<Fp16WeightsReferenceKernel>(spec);
  if (r_storage == RecurrentWeightStorage::kInt8 && int8_input)
    return std::make_unique<Int8WeightsReferenceKernel>(spec, *int8_input);
  return std::make_unique<ReferenceKernel>(spec);
}

}  // namespace voxrt::backends::cpu::recurrent
