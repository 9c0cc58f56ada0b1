#include "ir/passes/recognize_layer_norm.h"

#include <algorithm>
#include <optional>

namespace voxrt::ir {
namespace {

// The one node that reads `value`, or nullptr when it has several readers, none, or is a graph
// output (then the intermediate result is needed elsewhere and cannot disappear).
Node* sole_consumer(const Graph& graph, const Value* value) {
  if (graph.is_graph_output(value)) return nullptr;
  const std::vector<Node*> readers = graph.consumers(value);
  // consumers() lists a node once even when it reads the value twice (Mul(d, d)).
  return readers.size() == 1 ? readers[0] : nullptr;
}

std::optional<std::size_t> known_rank(const Value* value) {
  if (!value->rank_known) return std::nullopt;
  return value->shape.size();
}

// The value of a one-element numeric constant whose rank cannot widen the result of a
// broadcast with a tensor of rank `min_partner_rank` or more.
std::optional<float> scalar_constant(const Value* value, std::size_t min_partner_rank) {
  if (!value || !value->is_constant()) return std::nullopt;
  const Tensor& tensor = *value->constant;
  if (tensor.dtype() == DType::kBool || tensor.element_count() != 1) return std::nullopt;
  if (tensor.rank() > min_partner_rank) return std::nullopt;
  return static_cast<float>(tensor.element_as_double(0));
}

// For ReduceMean(., axes) with keepdims=1 over exactly the last k axes, k; nullopt otherwise.
// `rank` is the pattern input's rank (every tensor of the pattern has it), if known: the
// intermediate values may not have been shape-inferred yet.
std::optional<std::int64_t> trailing_axis_count(const Node& mean, std::optional<std::size_t> rank) {
  if (mean.op != OpKind::kReduceMean || mean.attrs.get_int("keepdims", 1) != 1) return std::nullopt;
  const Value* axes_value = mean.input(1);
  if (!mean.input(0) || !axes_value || !axes_value->is_constant()) return std::nullopt;
  std::vector<std::int64_t> axes = axes_value->constant->to_i64_vector();
  if (axes.empty()) return std::nullopt;
  for (std::int64_t& axis : axes) {
    if (axis >= 0) {
      if (!rank || axis >= static_cast<std::int64_t>(*rank)) return std::nullopt;
      axis -= static_cast<std::int64_t>(*rank);
    }
  }
  std::sort(axes.begin(), axes.end());
  const auto k = static_cast<std::int64_t>(axes.size());
  for (std::int64_t i = 0; i < k; ++i) {
    if (axes[static_cast<std::size_t>(i)] != i - k) return std::nullopt;
  }
  if (rank && k > static_cast<std::int64_t>(*rank)) return std::nullopt;
  return k;
}

// The input of a two-input node that is not `value`, or nullptr.
Value* other_input(const Node& node, const Value* value) {
  if (node.inputs.size() != 2) return nullptr;
  if (node.inputs[0] == value) return node.inputs[1];
  if (node.inputs[1] == value) return node.inputs[0];
  return nullptr;
}

struct Match {
  std::vector<Node*> nodes;
  Value* x = nullptr;
  std::int64_t axis_count = 0;
  float epsilon = 0.0f;
  // Constant tensors already reshaped to at most axis_count dims; absent when not matched.
  std::optional<Tensor> scale;
  std::optional<Tensor> bias;
  Value* scale_source = nullptr;
  Value* bias_source = nullptr;
  Value* output = nullptr;
};

// `param` (gamma or beta) as a tensor of at most `axis_count` dims that broadcasts to x's last
// dims exactly as the elementwise op did; nullopt when the op would broadcast differently (a
// per-row parameter, or one that widens the output).
std::optional<Tensor> normalized_parameter(const Value* param, const Value* x,
                                           std::int64_t axis_count) {
  if (!param || !param->is_constant() || param->constant->dtype() != x->dtype) return std::nullopt;
  const Tensor& tensor = *param->constant;
  const std::optional<std::size_t> rank = known_rank(x);
  const std::size_t limit = rank ? *rank : static_cast<std::size_t>(axis_count);
  if (tensor.rank() > limit) return std::nullopt;
  Dims dims = tensor.dims();
  while (dims.size() > static_cast<std::size_t>(axis_count) && dims.front() == 1)
    dims.erase(dims.begin());
  if (dims.size() > static_cast<std::size_t>(axis_count)) return std::nullopt;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 1) continue;
    // A non-1 parameter dim must equal x's dim; if x's dim were unknown (maybe 1), the Mul could
    // widen the output, which LayerNormalization would not.
    if (!rank) return std::nullopt;
    const Dim& xdim = x->shape[*rank - dims.size() + i];
    if (!xdim.is_known() || xdim.value != dims[i]) return std::nullopt;
  }
  auto reshaped = tensor.reshaped(dims);
  if (!reshaped) return std::nullopt;
  return std::move(reshaped).value();
}

std::optional<Match> match_at(const Graph& graph, Node* first_mean) {
  Match match;
  match.x = first_mean->input(0);
  if (!match.x || !is_floating(match.x->dtype)) return std::nullopt;
  const std::optional<std::int64_t> k = trailing_axis_count(*first_mean, known_rank(match.x));
  if (!k) return std::nullopt;
  match.axis_count = *k;
  const std::size_t min_rank = known_rank(match.x).value_or(static_cast<std::size_t>(*k));

  Node* sub = sole_consumer(graph, first_mean->output(0));
  if (!sub || sub->op != OpKind::kSub || sub->input(0) != match.x ||
      sub->input(1) != first_mean->output(0)) {
    return std::nullopt;
  }
  Value* centered = sub->output(0);
  if (!centered || graph.is_graph_output(centered)) return std::nullopt;
  const std::vector<Node*> centered_readers = graph.consumers(centered);
  if (centered_readers.size() != 2) return std::nullopt;
  Node* square = nullptr;
  Node* div = nullptr;
  for (Node* reader : centered_readers) {
    if (reader->op == OpKind::kDiv && reader->input(0) == centered &&
        reader->input(1) != centered) {
      div = reader;
    } else if (reader->op == OpKind::kPow && reader->input(0) == centered) {
      const std::optional<float> exponent = scalar_constant(reader->input(1), min_rank);
      if (exponent && *exponent == 2.0f) square = reader;
    } else if (reader->op == OpKind::kMul && reader->input(0) == centered &&
               reader->input(1) == centered) {
      square = reader;
    }
  }
  if (!square || !div) return std::nullopt;

  Node* second_mean = sole_consumer(graph, square->output(0));
  if (!second_mean || second_mean->input(0) != square->output(0) ||
      trailing_axis_count(*second_mean, known_rank(match.x)) != k) {
    return std::nullopt;
  }
  Node* add_epsilon = sole_consumer(graph, second_mean->output(0));
  if (!add_epsilon || add_epsilon->op != OpKind::kAdd) return std::nullopt;
  const std::optional<float> epsilon =
      scalar_constant(other_input(*add_epsilon, second_mean->output(0)), min_rank);
  if (!epsilon) return std::nullopt;
  match.epsilon = *epsilon;
  Node* sqrt = sole_consumer(graph, add_epsilon->output(0));
  if (!sqrt || sqrt->op != OpKind::kSqrt) return std::nullopt;
  if (sole_consumer(graph, sqrt->output(0)) != div || div->input(1) != sqrt->output(0))
    return std::nullopt;
  match.nodes = {first_mean, sub, square, second_mean, add_epsilon, sqrt, div};
  match.output = div->output(0);

  // Optional affine tail: Mul(., gamma) then Add(., beta), each absorbed only if it is a
  // per-feature constant.
  if (Node* mul = sole_consumer(graph, match.output); mul && mul->op == OpKind::kMul) {
    Value* gamma = other_input(*mul, match.output);
    if (gamma && gamma != match.output) {
      if (auto scale = normalized_parameter(gamma, match.x, *k)) {
        match.scale = std::move(scale);
        match.scale_source = gamma;
        match.nodes.push_back(mul);
        match.output = mul->output(0);
      }
    }
  }
  if (Node* add = sole_consumer(graph, match.output); add && add->op == OpKind::kAdd) {
    Value* beta = other_input(*add, match.output);
    if (beta && beta != match.output) {
      if (auto bias = normalized_parameter(beta, match.x, *k)) {
        match.bias = std::move(bias);
        match.bias_source = beta;
        match.nodes.push_back(add);
        match.output = add->output(0);
      }
    }
  }
  if (!match.output) return std::nullopt;
  return match;
}

// A constant value for `tensor`: the original value when the tensor is its constant unchanged,
// otherwise a new one (a reshaped gamma, the ones that stand in for a missing gamma).
Value* constant_value(Graph& graph, Value* source, const Tensor& tensor, const std::string& base) {
  if (source && source->constant->dims() == tensor.dims()) return source;
  return graph.add_constant(graph.unique_name(base), tensor.clone());
}

Tensor ones_scale(const Value* x, std::int64_t axis_count, DType dtype) {
  // [last dims] when they are known, else [1]; both broadcast to the normalized shape.
  Dims dims{1};
  if (x->rank_known && static_cast<std::int64_t>(x->shape.size()) >= axis_count) {
    const SymShape trailing(x->shape.end() - axis_count, x->shape.end());
    if (auto known = known_dims(trailing)) dims = *known;
  }
  Tensor ones = Tensor::uninitialized(dtype, dims);
  for (std::int64_t i = 0; i < ones.element_count(); ++i) {
    switch (dtype) {
      case DType::kF16: ones.data<std::uint16_t>()[i] = float_to_half_bits(1.0f); break;
      case DType::kBF16: ones.data<std::uint16_t>()[i] = float_to_bfloat16_bits(1.0f); break;
      default: ones.data<float>()[i] = 1.0f; break;
    }
  }
  return ones;
}

void rewrite(Graph& graph, Match& match, PassReport& report) {
  const std::string name = graph.unique_name(match.nodes.back()->name + "_layer_norm");
  Value* scale = match.scale
                     ? constant_value(graph, match.scale_source, *match.scale, name + "_scale")
                     : graph.add_constant(graph.unique_name(name + "_scale"),
                                          ones_scale(match.x, match.axis_count, match.x->dtype));
  Value* bias =
      match.bias ? constant_value(graph, match.bias_source, *match.bias, name + "_bias") : nullptr;
  std::vector<std::string> origin;
  std::string matched_names;
  for (Node* node : match.nodes) {
    if (node->origin.empty()) {
      origin.push_back(node->name);
    } else {
      origin.insert(origin.end(), node->origin.begin(), node->origin.end());
    }
    matched_names += str_cat(matched_names.empty() ? "" : ", ", "'", node->name, "'");
  }
  for (Node* node : match.nodes) graph.remove_node(node);
  std::vector<Value*> inputs{match.x, scale};
  if (bias) inputs.push_back(bias);
  Node* layer_norm =
      graph.add_node(OpKind::kLayerNormalization, name, std::move(inputs), {match.output});
  layer_norm->attrs.set("axis", -match.axis_count);
  layer_norm->attrs.set("epsilon", match.epsilon);
  layer_norm->opset = 17;
  layer_norm->origin = std::move(origin);
  report.changes.push_back(str_cat("recognized LayerNormalization '", name, "' (axis ",
                                   -match.axis_count, ", epsilon ", match.epsilon, ", ",
                                   match.scale ? "with" : "without", " scale, ",
                                   match.bias ? "with" : "without", " bias) from ",
                                   match.nodes.size(), " nodes: ", matched_names));
}

class RecognizeLayerNormPass final : public Pass {
 public:
  std::string_view name() const override { return "recognize_layer_norm"; }

  Status apply(Graph& graph, PassReport& report) override {
    bool rewrote_any = false;
    // Each rewrite removes nodes, so scan again from a fresh node list after it.
    for (bool rewrote = true; rewrote;) {
      rewrote = false;
      for (Node* node : graph.nodes()) {
        if (node->op != OpKind::kReduceMean) continue;
        std::optional<Match> match = match_at(graph, node);
        if (!match) continue;
        rewrite(graph, *match, report);
        rewrote = rewrote_any = true;
        break;
      }
    }
    if (rewrote_any) graph.prune_unused_values();
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_layer_norm_pass() {
  return std::make_unique<RecognizeLayerNormPass>();
}

}  // namespace voxrt::ir
