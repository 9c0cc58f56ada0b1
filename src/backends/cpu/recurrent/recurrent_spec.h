// What every recurrent kernel (GRU, LSTM, RNN) needs to know about its node, parsed and checked
// once at kernel creation, plus the per-call view of the inputs and outputs. ONNX formulas and
// gate orders: GRU z,r,h; LSTM i,o,f,c (peepholes i,o,f); RNN one gate.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cpu::recurrent {

enum class CellKind : std::uint8_t { kRnn, kGru, kLstm };

enum class ActivationKind : std::uint8_t {
  kSigmoid,
  kTanh,
  kRelu,
  kHardSigmoid,
  kLeakyRelu,
  kAffine,
  kScaledTanh,
  kElu,
  kSoftsign,
  kSoftplus,
  kThresholdedRelu,
};

struct Activation {
  ActivationKind kind = ActivationKind::kSigmoid;
  float alpha = 0.0f;
  float beta = 0.0f;

  // Scalar form, straight from the ONNX operator definitions.
  float apply(float x) const {
    switch (kind) {
      case ActivationKind::kSigmoid: return 1.0f / (1.0f + std::exp(-x));
      case ActivationKind::kTanh: return std::tanh(x);
      case ActivationKind::kRelu: return x > 0.0f ? x : 0.0f;
      case ActivationKind::kHardSigmoid: return std::fmax(0.0f, std::fmin(1.0f, alpha * x + beta));
      case ActivationKind::kLeakyRelu: return x >= 0.0f ? x : alpha * x;
      case ActivationKind::kAffine: return alpha * x + beta;
      case ActivationKind::kScaledTanh: return alpha * std::tanh(beta * x);
      case ActivationKind::kElu: return x >= 0.0f ? x : alpha * (std::exp(x) - 1.0f);
      case ActivationKind::kSoftsign: return x / (1.0f + std::fabs(x));
      case ActivationKind::kSoftplus:
        return std::log1p(std::exp(-std::fabs(x))) + std::fmax(x, 0.0f);
      case ActivationKind::kThresholdedRelu: return x > alpha ? x : 0.0f;
    }
    return x;
  }
};

struct RecurrentSpec {
  CellKind cell = CellKind::kGru;
  int gates = 3;  // 1 (RNN), 3 (GRU), 4 (LSTM)
  int num_directions = 1;
  bool reverse_only = false;  // direction == "reverse"
  std::int64_t hidden_size = 0;
  std::int64_t input_size = 0;
  bool linear_before_reset = false;  // GRU
  bool input_forget = false;         // LSTM: f = 1 - i
  bool has_clip = false;
  float clip = 0.0f;
  int layout = 0;  // 0: [seq, batch, ...]; 1: [batch, seq, ...]
  // activations_per_direction() entries per direction: RNN f; GRU f, g; LSTM f, g, h.
  std::vector<Activation> activations;

  int activations_per_direction() const {
    return cell == CellKind::kRnn ? 1 : cell == CellKind::kGru ? 2 : 3;
  }
  const Activation& activation(int direction, int index) const {
    return activations[static_cast<std::size_t>(direction * activations_per_direction() + index)];
  }
  // Whether direction `d` walks the sequence from its end.
  bool is_reverse(int direction) const { return reverse_only || direction == 1; }
  float clip_value(float x) const { return has_clip ? std::fmin(std::fmax(x, -clip), clip) : x; }
  // Default activations everywhere (what oneDNN can run).
  bool has_default_activations() const;
};

// Parses and validates the node's attributes and its weight shapes (W, R must have known dims).
Expected<RecurrentSpec> parse_recurrent_spec(const ir::Node& node);

// Input/output tensors of one call, in ONNX order. Null = omitted.
struct RecurrentIo {
  const Tensor* x = nullptr;
  const Tensor* w = nullptr;
  const Tensor* r = nullptr;
  const Tensor* b = nullptr;
  const Tensor* sequence_lens = nullptr;
  const Tensor* initial_h = nullptr;
  const Tensor* initial_c = nullptr;
  const Tensor* p = nullptr;
  Tensor* y = nullptr;
  Tensor* y_h = nullptr;
  Tensor* y_c = nullptr;

  std::int64_t seq_length = 0;
  std::int64_t batch = 0;
  // Per batch entry, clamped to [0, seq_length].
  std::vector<std::int64_t> lengths;
  // True when every entry has the full length (no sequence_lens or all equal to seq_length).
  bool all_full_length = true;
};

Expected<RecurrentIo> bind_recurrent_io(const RecurrentSpec& spec,
                                        std::span<const Tensor* const> inputs,
                                        std::span<Tensor* const> outputs);

// Element offsets into X, Y and the state tensors for the two layouts.
struct LayoutStrides {
  std::int64_t seq_length, batch, num_directions, hidden, input;
  int layout;
  // Row (of length input) of X for time t, batch entry b.
  std::int64_t x_row(std::int64_t t, std::int64_t b) const {
    return layout == 0 ? t * batch + b : b * seq_length + t;
  }
  // Offset of Y[t, d, b, 0] (layout 0) / Y[b, t, d, 0] (layout 1).
  std::int64_t y_offset(std::int64_t t, int d, std::int64_t b) const {
    return layout == 0 ? ((t * num_directions + d) * batch + b) * hidden
                       : ((b * seq_length + t) * num_directions + d) * hidden;
  }
  // Offset of state[d, b, 0] (layout 0) / state[b, d, 0] (layout 1).
  std::int64_t state_offset(int d, std::int64_t b) const {
    return layout == 0 ? (d * batch + b) * hidden : (b * num_directions + d) * hidden;
  }
};

LayoutStrides layout_strides(const RecurrentSpec& spec, const RecurrentIo& io);

// Zeroes Y entries past each batch entry's length (ONNX: outputs beyond sequence_lens are 0).
void zero_y_past_lengths(const RecurrentSpec& spec, const RecurrentIo& io);

}  // namespace voxrt::backends::cpu::recurrent
