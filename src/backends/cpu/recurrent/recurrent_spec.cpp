#include "backends/cpu/recurrent/recurrent_spec.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace voxrt::backends::cpu::recurrent {
namespace {

std::string lowercase(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

struct ActivationName {
  const char* name;
  ActivationKind kind;
  int alpha_count, beta_count;  // how many entries of activation_alpha/beta it consumes
  float default_alpha, default_beta;
};

// Defaults are those of the ONNX operators of the same name. Like onnxruntime, an activation
// consumes activation_alpha/activation_beta entries only when it takes that parameter.
constexpr ActivationName kActivationNames[] = {
    {"sigmoid", ActivationKind::kSigmoid, 0, 0, 0.0f, 0.0f},
    {"tanh", ActivationKind::kTanh, 0, 0, 0.0f, 0.0f},
    {"relu", ActivationKind::kRelu, 0, 0, 0.0f, 0.0f},
    {"hardsigmoid", ActivationKind::kHardSigmoid, 1, 1, 0.2f, 0.5f},
    {"leakyrelu", ActivationKind::kLeakyRelu, 1, 0, 0.01f, 0.0f},
    {"affine", ActivationKind::kAffine, 1, 1, 1.0f, 0.0f},
    {"scaledtanh", ActivationKind::kScaledTanh, 1, 1, 1.0f, 1.0f},
    {"elu", ActivationKind::kElu, 1, 0, 1.0f, 0.0f},
    {"softsign", ActivationKind::kSoftsign, 0, 0, 0.0f, 0.0f},
    {"softplus", ActivationKind::kSoftplus, 0, 0, 0.0f, 0.0f},
    {"thresholdedrelu", ActivationKind::kThresholdedRelu, 1, 0, 1.0f, 0.0f},
};

Expected<std::vector<Activation>> parse_activations(const ir::Node& node,
                                                    const RecurrentSpec& spec) {
  const int per_direction = spec.activations_per_direction();
  std::vector<std::string> names = node.attrs.get_strings("activations");
  if (names.empty()) {
    switch (spec.cell) {
      case CellKind::kRnn: names = {"Tanh"}; break;
      case CellKind::kGru: names = {"Sigmoid", "Tanh"}; break;
      case CellKind::kLstm: names = {"Sigmoid", "Tanh", "Tanh"}; break;
    }
  }
  const std::size_t expected = static_cast<std::size_t>(per_direction * spec.num_directions);
  if (names.size() == static_cast<std::size_t>(per_direction) && spec.num_directions == 2) {
    const std::vector<std::string> forward_names = names;  // one list for both directions
    names.insert(names.end(), forward_names.begin(), forward_names.end());
  }
  if (names.size() != expected) {
    return invalid_argument(node.describe(), ": attribute activations needs ", expected,
                            " entries (", per_direction, " per direction), found ", names.size());
  }
  const std::vector<float> alphas = node.attrs.get_floats("activation_alpha");
  const std::vector<float> betas = node.attrs.get_floats("activation_beta");
  std::size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> result;
  for (const std::string& name : names) {
    const std::string key = lowercase(name);
    const ActivationName* found = nullptr;
    for (const ActivationName& candidate : kActivationNames) {
      if (key == candidate.name) found = &candidate;
    }
    if (!found) {
      return unsupported(
          node.describe(), ": activation '", name,
          "' is not supported (supported: Sigmoid, Tanh, Relu, HardSigmoid, ",
          "LeakyRelu, Affine, ScaledTanh, Elu, Softsign, Softplus, ThresholdedRelu)");
    }
    Activation activation{found->kind, found->default_alpha, found->default_beta};
    if (found->alpha_count && next_alpha < alphas.size()) activation.alpha = alphas[next_alpha++];
    if (found->beta_count && next_beta < betas.size()) activation.beta = betas[next_beta++];
    result.push_back(activation);
  }
  return result;
}

Expected<std::int64_t> known_dim(const ir::Node& node, std::size_t input, std::size_t axis,
                                 const char* name) {
  const ir::Value* value = node.input(input);
  if (!value || !value->rank_known || value->shape.size() != 3 || !value->shape[axis].is_known()) {
    return invalid_argument(node.describe(), ": input ", name,
                            " needs a known rank-3 shape to prepare the kernel, found ",
                            value ? ir::sym_shape_to_string(value->shape) : std::string("none"));
  }
  return value->shape[axis].value;
}

}  // namespace

bool RecurrentSpec::has_default_activations() const {
  for (int d = 0; d < num_directions; ++d) {
    for (int i = 0; i < activations_per_direction(); ++i) {
      const ActivationKind expected =
          (cell == CellKind::kRnn || i > 0) ? ActivationKind::kTanh : ActivationKind::kSigmoid;
      if (activation(d, i).kind != expected) return false;
    }
  }
  return true;
}

Expected<RecurrentSpec> parse_recurrent_spec(const ir::Node& node) {
  RecurrentSpec spec;
  switch (node.op) {
    case ir::OpKind::kRNN:
      spec.cell = CellKind::kRnn;
      spec.gates = 1;
      break;
    case ir::OpKind::kGRU:
      spec.cell = CellKind::kGru;
      spec.gates = 3;
      break;
    case ir::OpKind::kLSTM:
      spec.cell = CellKind::kLstm;
      spec.gates = 4;
      break;
    default: return invalid_argument(node.describe(), ": not a recurrent op");
  }
  const std::string direction = node.attrs.get_string("direction", "forward");
  if (direction == "bidirectional") {
    spec.num_directions = 2;
  } else if (direction == "reverse") {
    spec.reverse_only = true;
  } else if (direction != "forward") {
    return invalid_argument(node.describe(), ": attribute direction must be forward, reverse or ",
                            "bidirectional, found '", direction, "'");
  }
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t gate_rows, known_dim(node, 1, 1, "W"));
  VOXRT_ASSIGN_OR_RETURN(spec.input_size, known_dim(node, 1, 2, "W"));
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t r_hidden, known_dim(node, 2, 2, "R"));
  spec.hidden_size = node.attrs.get_int("hidden_size", r_hidden);
  // Divide, not multiply: the dims of a corrupt engine file may be near INT64_MAX.
  if (spec.hidden_size <= 0 || spec.hidden_size != r_hidden || gate_rows % spec.gates != 0 ||
      gate_rows / spec.gates != spec.hidden_size) {
    return invalid_argument(node.describe(), ": hidden_size ", spec.hidden_size,
                            " does not match W (", gate_rows, " gate rows) and R (hidden ",
                            r_hidden, ")");
  }
  spec.linear_before_reset =
      spec.cell == CellKind::kGru && node.attrs.get_int("linear_before_reset", 0) != 0;
  spec.input_forget = spec.cell == CellKind::kLstm && node.attrs.get_int("input_forget", 0) != 0;
  if (node.attrs.has("clip")) {
    spec.has_clip = true;
    spec.clip = node.attrs.get_float("clip", 0.0f);
    if (!(spec.clip > 0.0f)) {
      return invalid_argument(node.describe(), ": attribute clip must be positive, found ",
                              spec.clip);
    }
  }
  spec.layout = node.opset >= 14 ? static_cast<int>(node.attrs.get_int("layout", 0)) : 0;
  if (spec.layout != 0 && spec.layout != 1) {
    return invalid_argument(node.describe(), ": attribute layout must be 0 or 1, found ",
                            spec.layout);
  }
  VOXRT_ASSIGN_OR_RETURN(spec.activations, parse_activations(node, spec));
  return spec;
}

Expected<RecurrentIo> bind_recurrent_io(const RecurrentSpec& spec,
                                        std::span<const Tensor* const> inputs,
                                        std::span<Tensor* const> outputs) {
  RecurrentIo io;
  auto in = [&](std::size_t i) -> const Tensor* { return i < inputs.size() ? inputs[i] : nullptr; };
  auto out = [&](std::size_t i) -> Tensor* { return i < outputs.size() ? outputs[i] : nullptr; };
  io.x = in(0);
  io.w = in(1);
  io.r = in(2);
  io.b = in(3);
  io.sequence_lens = in(4);
  io.initial_h = in(5);
  if (spec.cell == CellKind::kLstm) {
    io.initial_c = in(6);
    io.p = in(7);
  }
  io.y = out(0);
  io.y_h = out(1);
  if (spec.cell == CellKind::kLstm) io.y_c = out(2);
  if (!io.x || !io.w || !io.r || io.x->rank() != 3) {
    return invalid_argument("recurrent kernel: X, W and R are required and X must be rank 3");
  }
  for (const Tensor* t : {io.x, io.w, io.r, io.b, io.initial_h, io.initial_c, io.p}) {
    if (t && t->dtype() != DType::kF32) {
      return unsupported("recurrent kernel: only f32 tensors are supported, found ",
                         dtype_name(t->dtype()));
    }
  }
  io.seq_length = io.x->dim(spec.layout == 0 ? 0 : 1);
  io.batch = io.x->dim(spec.layout == 0 ? 1 : 0);
  if (io.x->dim(2) != spec.input_size) {
    return invalid_argument("recurrent kernel: X has input size ", io.x->dim(2), ", W expects ",
                            spec.input_size);
  }
  io.lengths.assign(static_cast<std::size_t>(io.batch), io.seq_length);
  if (io.sequence_lens) {
    if (io.sequence_lens->element_count() != io.batch) {
      return invalid_argument("recurrent kernel: sequence_lens has ",
                              io.sequence_lens->element_count(), " entries, batch is ", io.batch);
    }
    for (std::int64_t b = 0; b < io.batch; ++b) {
      const std::int64_t len = io.sequence_lens->element_as_i64(b);
      if (len < 0 || len > io.seq_length) {
        return invalid_argument("recurrent kernel: sequence_lens[", b, "] = ", len,
                                " is outside [0, ", io.seq_length, "]");
      }
      io.lengths[static_cast<std::size_t>(b)] = len;
      if (len != io.seq_length) io.all_full_length = false;
    }
  }
  return io;
}

LayoutStrides layout_strides(const RecurrentSpec& spec, const RecurrentIo& io) {
  return LayoutStrides{io.seq_length,    io.batch,        spec.num_directions,
                       spec.hidden_size, spec.input_size, spec.layout};
}

void zero_y_past_lengths(const RecurrentSpec& spec, const RecurrentIo& io) {
  if (!io.y || io.all_full_length) return;
  const LayoutStrides strides = layout_strides(spec, io);
  float* y = io.y->data<float>();
  for (std::int64_t b = 0; b < io.batch; ++b) {
    for (std::int64_t t = io.lengths[static_cast<std::size_t>(b)]; t < io.seq_length; ++t) {
      for (int d = 0; d < spec.num_directions; ++d) {
        std::memset(y + strides.y_offset(t, d, b), 0,
                    static_cast<std::size_t>(spec.hidden_size) * sizeof(float));
      }
    }
  }
}

}  // namespace voxrt::backends::cpu::recurrent
