// Builds a one-node GRU / LSTM / RNN graph with random inputs and runs any CPU tactic on it, the
// way the runtime does: shape inference with every input known, outputs pre-filled with NaN (a
// kernel that skips an element fails the comparison), then Kernel::run.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/shape_inference.h"

namespace voxrt::recurrent_test {

struct RecurrentCase {
  ir::OpKind op = ir::OpKind::kGRU;
  std::string direction = "forward";
  std::int64_t hidden = 7, input = 5, seq = 6, batch = 3;
  bool bias = true;
  bool initial_states = false;
  std::vector<std::int32_t> lengths;  // empty: no sequence_lens input
  bool peepholes = false;
  std::optional<float> clip;
  int layout = 0;
  int linear_before_reset = 0;
  int input_forget = 0;
  std::vector<std::string> activations;
  std::vector<float> activation_alpha, activation_beta;
  bool constant_weights = true;
  bool all_outputs = true;
  std::uint32_t seed = 1;

  int gates() const { return op == ir::OpKind::kGRU ? 3 : op == ir::OpKind::kLSTM ? 4 : 1; }
  int directions() const { return direction == "bidirectional" ? 2 : 1; }
  std::string describe() const;
};

inline std::string RecurrentCase::describe() const {
  std::string text = std::string(op == ir::OpKind::kGRU    ? "GRU"
                                 : op == ir::OpKind::kLSTM ? "LSTM"
                                                           : "RNN");
  text += " " + direction + " H=" + std::to_string(hidden) + " I=" + std::to_string(input) +
          " T=" + std::to_string(seq) + " B=" + std::to_string(batch);
  if (bias) text += " bias";
  if (initial_states) text += " init";
  if (!lengths.empty()) text += " lens";
  if (peepholes) text += " peep";
  if (clip) text += " clip";
  if (layout) text += " layout1";
  if (linear_before_reset) text += " lbr";
  if (input_forget) text += " input_forget";
  if (!activations.empty()) text += " acts=" + activations[0];
  if (!constant_weights) text += " runtime-weights";
  return text;
}

inline Tensor random_tensor(std::mt19937& rng, Dims dims, float scale) {
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  std::uniform_real_distribution<float> dist(-scale, scale);
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// A graph holding one recurrent node; `inputs[i]` is empty for omitted optional inputs.
struct RecurrentFixture {
  ir::Graph graph;
  ir::Node* node = nullptr;
  std::vector<std::optional<Tensor>> inputs;
};

inline void build_fixture(const RecurrentCase& c, RecurrentFixture& f,
                          std::vector<std::optional<Tensor>> given = {}) {
  std::mt19937 rng(c.seed);
  const std::int64_t d = c.directions(), g = c.gates(), h = c.hidden;
  const float weight_scale = 1.0f / std::sqrt(static_cast<float>(h));
  const bool lstm = c.op == ir::OpKind::kLSTM;
  const std::size_t count = lstm ? 8 : 6;
  f.inputs.assign(count, std::nullopt);
  const Dims x_dims = c.layout == 0 ? Dims{c.seq, c.batch, c.input} : Dims{c.batch, c.seq, c.input};
  const Dims state_dims = c.layout == 0 ? Dims{d, c.batch, h} : Dims{c.batch, d, h};
  f.inputs[0] = random_tensor(rng, x_dims, 1.0f);
  f.inputs[1] = random_tensor(rng, {d, g * h, c.input}, weight_scale);
  f.inputs[2] = random_tensor(rng, {d, g * h, h}, weight_scale);
  if (c.bias) f.inputs[3] = random_tensor(rng, {d, 2 * g * h}, weight_scale);
  if (!c.lengths.empty()) f.inputs[4] = Tensor::from_vector<std::int32_t>({c.batch}, c.lengths);
  if (c.initial_states) {
    f.inputs[5] = random_tensor(rng, state_dims, 0.8f);
    if (lstm) f.inputs[6] = random_tensor(rng, state_dims, 0.8f);
  }
  if (lstm && c.peepholes) f.inputs[7] = random_tensor(rng, {d, 3 * h}, 0.5f);
  for (std::size_t i = 0; i < given.size() && i < count; ++i) {
    if (given[i]) f.inputs[i] = given[i];
  }

  std::vector<ir::Value*> values;
  for (std::size_t i = 0; i < count; ++i) {
    if (!f.inputs[i]) {
      values.push_back(nullptr);
      continue;
    }
    const bool weight = i == 1 || i == 2 || i == 3 || i == 7;
    if (weight && c.constant_weights) {
      values.push_back(f.graph.add_constant("in" + std::to_string(i), *f.inputs[i]));
    } else {
      values.push_back(f.graph.add_value("in" + std::to_string(i), f.inputs[i]->dtype(),
                                         ir::sym_shape_from_dims(f.inputs[i]->dims())));
    }
  }
  while (!values.empty() && !values.back()) values.pop_back();
  std::vector<ir::Value*> outputs;
  const std::size_t output_count = lstm ? 3 : 2;
  for (std::size_t i = 0; i < output_count; ++i) {
    outputs.push_back(c.all_outputs || i == 0
                          ? f.graph.add_value("out" + std::to_string(i), DType::kF32, {}, false)
                          : nullptr);
  }
  f.node = f.graph.add_node(c.op, "rnn_under_test", values, outputs);
  f.node->opset = 14;
  f.node->attrs.set("hidden_size", c.hidden);
  f.node->attrs.set("direction", c.direction);
  if (c.layout) f.node->attrs.set("layout", std::int64_t{c.layout});
  if (c.op == ir::OpKind::kGRU) {
    f.node->attrs.set("linear_before_reset", std::int64_t{c.linear_before_reset});
  }
  if (lstm && c.input_forget) f.node->attrs.set("input_forget", std::int64_t{c.input_forget});
  if (c.clip) f.node->attrs.set("clip", *c.clip);
  if (!c.activations.empty()) f.node->attrs.set("activations", c.activations);
  if (!c.activation_alpha.empty()) f.node->attrs.set("activation_alpha", c.activation_alpha);
  if (!c.activation_beta.empty()) f.node->attrs.set("activation_beta", c.activation_beta);
}

// Runs `tactic` on the fixture; returns the outputs (empty tensors for omitted ones).
inline Expected<std::vector<Tensor>> run_tactic(const RecurrentFixture& f,
                                                backends::TacticId tactic, int threads) {
  std::vector<ir::ValueInfo> infos;
  std::vector<const Tensor*> inputs;
  for (std::size_t i = 0; i < f.node->inputs.size(); ++i) {
    ir::ValueInfo info;
    if (!f.node->inputs[i]) {
      info.present = false;
      inputs.push_back(nullptr);
    } else {
      const Tensor& t = *f.inputs[i];
      info.dtype = t.dtype();
      info.shape = ir::sym_shape_from_dims(t.dims());
      info.data = &t;
      inputs.push_back(&t);
    }
    infos.push_back(info);
  }
  std::vector<ir::InferredOutput> inferred;
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*f.node, infos, inferred));
  std::vector<Tensor> results(f.node->outputs.size());
  std::vector<Tensor*> outputs;
  for (std::size_t i = 0; i < f.node->outputs.size(); ++i) {
    if (!f.node->outputs[i]) {
      outputs.push_back(nullptr);
      continue;
    }
    auto dims = ir::known_dims(inferred[i].shape);
    if (!dims) return internal_error("output ", i, " shape is not fully known");
    results[i] = Tensor::uninitialized(DType::kF32, *dims);
    for (float& v : results[i].span<float>()) v = std::nanf("");
    outputs.push_back(&results[i]);
  }
  VOXRT_ASSIGN_OR_RETURN(auto kernel, backends::cpu::create_kernel(*f.node, tactic));
  ThreadPool pool(threads);
  backends::KernelContext context{&pool};
  VOXRT_RETURN_IF_ERROR(kernel->run(inputs, outputs, context));
  return results;
}

// Largest |a - b| / (atol + rtol * |b|); > 1 means out of tolerance. NaN counts as failure.
inline double worst_error_ratio(const Tensor& a, const Tensor& b, double atol, double rtol) {
  if (a.dims() != b.dims()) return INFINITY;
  double worst = 0.0;
  for (std::int64_t i = 0; i < a.element_count(); ++i) {
    const double x = a.data<float>()[i], y = b.data<float>()[i];
    const double ratio = std::fabs(x - y) / (atol + rtol * std::fabs(y));
    if (!(ratio <= worst)) worst = std::isnan(ratio) ? INFINITY : ratio;
  }
  return worst;
}

}  // namespace voxrt::recurrent_test
