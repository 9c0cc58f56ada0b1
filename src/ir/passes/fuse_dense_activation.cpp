#include "ir/passes/fuse_dense_activation.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <optional>
#include <set>
#include <tuple>
#include <utility>

namespace voxrt::ir {
namespace {

std::vector<std::string> origin_of(const Node& node) {
  return node.origin.empty() ? std::vector<std::string>{node.name} : node.origin;
}

bool near(float value, float expected) {
  return std::fabs(value - expected) <= 1e-4f * std::max(1.0f, std::fabs(expected));
}

std::optional<float> scalar_constant(const Value* value) {
  if (!value || !value->is_constant() || value->constant->dtype() != DType::kF32 ||
      value->constant->element_count() != 1) {
    return std::nullopt;
  }
  return value->constant->data<float>()[0];
}

// The other input of a binary node when one of them is `value`.
const Value* other_operand(const Node& node, const Value* value) {
  if (node.inputs.size() != 2) return nullptr;
  if (node.inputs[0] == value) return node.inputs[1];
  if (node.inputs[1] == value) return node.inputs[0];
  return nullptr;
}

// The one node reading `value`, when it is not a graph output either.
Node* sole_consumer(const Graph& graph, const Value* value) {
  if (!value || graph.is_graph_output(value)) return nullptr;
  std::vector<Node*> users = graph.consumers(value);
  return users.size() == 1 ? users[0] : nullptr;
}

// Max / Min of `x` and a scalar f32 constant, or Clip of `x` with constant (or absent) bounds:
// the bounds [lo, hi] it clamps `x` to. The constant must not widen x's rank (broadcasting it
// would change the output shape).
std::optional<std::pair<float, float>> match_clamp(const Node& node, const Value* x) {
  if (node.op == OpKind::kMax || node.op == OpKind::kMin) {
    const Value* other = other_operand(node, x);
    auto c = scalar_constant(other);
    if (!c || !x->rank_known || other->constant->rank() > x->shape.size()) return std::nullopt;
    return node.op == OpKind::kMax ? std::pair{*c, FLT_MAX} : std::pair{-FLT_MAX, *c};
  }
  if (node.op == OpKind::kClip && node.input(0) == x) {
    std::pair<float, float> bounds{-FLT_MAX, FLT_MAX};
    if (node.input(1)) {
      auto lo = scalar_constant(node.input(1));
      if (!lo) return std::nullopt;
      bounds.first = *lo;
    }
    if (node.input(2)) {
      auto hi = scalar_constant(node.input(2));
      if (!hi) return std::nullopt;
      bounds.second = *hi;
    }
    return bounds;
  }
  return std::nullopt;
}

struct ActivationMatch {
  std::string kind;
  float alpha = 0.0f, beta = 0.0f;
  std::vector<Node*> nodes;  // in data order; the last one produces `output`
  Value* output = nullptr;
};

std::optional<ActivationMatch> match_simple(const Graph& graph, Value* x) {
  Node* act = sole_consumer(graph, x);
  if (!act || !act->output(0)) return std::nullopt;
  ActivationMatch match;
  if (act->op == OpKind::kMax || act->op == OpKind::kMin) {
    auto bounds = match_clamp(*act, x);
    if (!bounds) return std::nullopt;
    match.kind = "clip";
    std::tie(match.alpha, match.beta) = *bounds;
    match.nodes = {act};
    match.output = act->outputs[0];
    return match;
  }
  if (act->input(0) != x) return std::nullopt;
  switch (act->op) {
    case OpKind::kRelu: match.kind = "relu"; break;
    case OpKind::kSigmoid: match.kind = "sigmoid"; break;
    case OpKind::kTanh: match.kind = "tanh"; break;
    case OpKind::kLeakyRelu:
      match.kind = "leaky_relu";
      match.alpha = act->attrs.get_float("alpha", 0.01f);
      break;
    case OpKind::kClip: {
      match.kind = "clip";
      match.alpha = -FLT_MAX;
      match.beta = FLT_MAX;
      if (act->input(1)) {
        auto lo = scalar_constant(act->input(1));
        if (!lo) return std::nullopt;
        match.alpha = *lo;
      }
      if (act->input(2)) {
        auto hi = scalar_constant(act->input(2));
        if (!hi) return std::nullopt;
        match.beta = *hi;
      }
      break;
    }
    default: return std::nullopt;
  }
  match.nodes = {act};
  match.output = act->outputs[0];
  return match;
}

// x * 0.5 * (1 + Erf(x / sqrt(2))), as PyTorch and hand-written models spell it.
std::optional<ActivationMatch> match_gelu_erf(const Graph& graph, Value* x) {
  if (graph.is_graph_output(x)) return std::nullopt;
  const std::vector<Node*> x_users = graph.consumers(x);
  if (x_users.size() != 2) return std::nullopt;
  for (Node* scaled : x_users) {
    const Value* factor = other_operand(*scaled, x);
    auto c = scalar_constant(factor);
    if (!c) continue;
    const bool is_div =
        scaled->op == OpKind::kDiv && scaled->input(0) == x && near(*c, 1.41421356f);
    const bool is_mul = scaled->op == OpKind::kMul && near(*c, 0.70710678f);
    if (!is_div && !is_mul) continue;
    Node* erf = sole_consumer(graph, scaled->output(0));
    if (!erf || erf->op != OpKind::kErf) continue;
    Node* add = sole_consumer(graph, erf->output(0));
    if (!add || add->op != OpKind::kAdd) continue;
    auto one = scalar_constant(other_operand(*add, erf->output(0)));
    if (!one || !near(*one, 1.0f)) continue;
    Node* m1 = sole_consumer(graph, add->output(0));
    if (!m1 || m1->op != OpKind::kMul) continue;
    const Value* partner = other_operand(*m1, add->output(0));
    Node* other_x_user = x_users[0] == scaled ? x_users[1] : x_users[0];
    ActivationMatch match;
    match.kind = "gelu_erf";
    if (partner == x && other_x_user == m1) {
      // (x * (1 + erf)) * 0.5
      Node* m2 = sole_consumer(graph, m1->output(0));
      if (!m2 || m2->op != OpKind::kMul) continue;
      auto half = scalar_constant(other_operand(*m2, m1->output(0)));
      if (!half || !near(*half, 0.5f)) continue;
      match.nodes = {scaled, erf, add, m1, m2};
    } else if (auto half = scalar_constant(partner); half && near(*half, 0.5f)) {
      // x * ((1 + erf) * 0.5)
      Node* m2 = sole_consumer(graph, m1->output(0));
      if (!m2 || m2->op != OpKind::kMul || other_operand(*m2, m1->output(0)) != x ||
          other_x_user != m2)
        continue;
      match.nodes = {scaled, erf, add, m1, m2};
    } else if (partner && partner->producer == other_x_user && other_x_user->op == OpKind::kMul) {
      // (x * 0.5) * (1 + erf)
      auto h = scalar_constant(other_operand(*other_x_user, x));
      if (!h || !near(*h, 0.5f) || sole_consumer(graph, other_x_user->output(0)) != m1) continue;
      match.nodes = {scaled, erf, add, other_x_user, m1};
    } else {
      continue;
    }
    match.output = match.nodes.back()->outputs[0];
    if (!match.output) continue;
    return match;
  }
  return std::nullopt;
}

// x * Sigmoid(x) (SiLU / Swish, as torch exports nn.SiLU), either operand order.
std::optional<ActivationMatch> match_silu(const Graph& graph, Value* x) {
  if (graph.is_graph_output(x)) return std::nullopt;
  const std::vector<Node*> x_users = graph.consumers(x);
  if (x_users.size() != 2) return std::nullopt;
  for (Node* sigmoid : x_users) {
    if (sigmoid->op != OpKind::kSigmoid || sigmoid->input(0) != x) continue;
    Node* mul = x_users[0] == sigmoid ? x_users[1] : x_users[0];
    if (mul->op != OpKind::kMul || other_operand(*mul, x) != sigmoid->output(0) ||
        sole_consumer(graph, sigmoid->output(0)) != mul || !mul->output(0))
      continue;
    ActivationMatch match;
    match.kind = "silu";
    match.nodes = {sigmoid, mul};
    match.output = mul->outputs[0];
    return match;
  }
  return std::nullopt;
}

std::optional<ActivationMatch> match_activation(const Graph& graph, Value* x,
                                                const DenseActivationOptions& options) {
  if (options.silu) {
    if (auto silu = match_silu(graph, x)) return silu;
  }
  if (auto simple = match_simple(graph, x)) return simple;
  return match_gelu_erf(graph, x);
}

// A constant that adds one value per output channel of a conv output of rank `rank` with
// `channels` channels: [1, M, 1, ...], [M, 1, ...] or a single value.
std::optional<std::vector<float>> per_channel_values(const Value* value, std::size_t rank,
                                                     std::int64_t channels) {
  if (!value || !value->is_constant() || value->constant->dtype() != DType::kF32)
    return std::nullopt;
  const Tensor& t = *value->constant;
  if (t.rank() > rank) return std::nullopt;
  Dims dims(rank - t.rank(), 1);
  dims.insert(dims.end(), t.dims().begin(), t.dims().end());
  for (std::size_t axis = 0; axis < rank; ++axis) {
    if (axis == 1 ? (dims[axis] != 1 && dims[axis] != channels) : dims[axis] != 1)
      return std::nullopt;
  }
  std::vector<float> values(static_cast<std::size_t>(channels));
  for (std::int64_t c = 0; c < channels; ++c)
    values[static_cast<std::size_t>(c)] = t.data<float>()[dims[1] == 1 ? 0 : c];
  return values;
}

void set_activation(Node& node, const ActivationMatch& match) {
  node.attrs.set("activation", match.kind);
  if (match.kind == "leaky_relu" || match.kind == "clip")
    node.attrs.set("activation_alpha", match.alpha);
  if (match.kind == "clip") node.attrs.set("activation_beta", match.beta);
}

void take_over(Graph& graph, Node& dense, const std::vector<Node*>& fused, Value* output,
               PassReport& report, const std::string& what) {
  if (dense.origin.empty()) dense.origin.push_back(dense.name);
  std::string names;
  for (Node* node : fused) {
    for (const std::string& name : origin_of(*node)) dense.origin.push_back(name);
    names += str_cat(" + ", op_name(node->op), " '", node->name, "'");
  }
  dense.outputs[0] = output;
  output->producer = &dense;
  for (Node* node : fused) graph.remove_node(node);
  report.changes.push_back(str_cat("fused ", what, names, " into ", op_name(dense.op)));
}

bool fuse_conv(Graph& graph, Node& conv, PassReport& report,
               const DenseActivationOptions& options) {
  if (conv.op == OpKind::kFusedConv && conv.attrs.get_string("activation", "none") != "none")
    return false;
  Value* y = conv.output(0);
  const Value* w = conv.input(1);
  if (!y || !y->rank_known || !w || !w->rank_known || w->shape.empty() || !w->shape[0].is_known())
    return false;
  const std::int64_t channels = w->shape[0].value;
  std::vector<Node*> fused;
  Value* current = y;
  std::optional<std::vector<float>> extra_bias;
  if (Node* add = sole_consumer(graph, y); add && add->op == OpKind::kAdd && add->output(0)) {
    extra_bias = per_channel_values(other_operand(*add, y), y->shape.size(), channels);
    if (extra_bias && add->output(0)->rank_known &&
        add->output(0)->shape.size() == y->shape.size()) {
      fused.push_back(add);
      current = add->outputs[0];
    } else {
      extra_bias.reset();
    }
  }
  std::optional<ActivationMatch> act = match_activation(graph, current, options);
  if (!extra_bias && !act) return false;
  const std::string what = conv.describe();
  if (extra_bias) {
    const Value* old_bias = conv.input(2);
    if (old_bias && (!old_bias->is_constant() || old_bias->constant->element_count() != channels))
      return false;
    Tensor bias = Tensor::uninitialized(DType::kF32, {channels});
    for (std::int64_t c = 0; c < channels; ++c) {
      bias.data<float>()[c] = (*extra_bias)[static_cast<std::size_t>(c)] +
                              (old_bias ? old_bias->constant->data<float>()[c] : 0.0f);
    }
    conv.inputs.resize(3, nullptr);
    conv.inputs[2] = graph.add_constant(graph.unique_name(conv.name + "_bias"), std::move(bias));
  }
  conv.op = OpKind::kFusedConv;
  if (act) {
    set_activation(conv, *act);
    fused.insert(fused.end(), act->nodes.begin(), act->nodes.end());
    current = act->output;
  } else if (!conv.attrs.has("activation")) {
    conv.attrs.set("activation", std::string("none"));
  }
  take_over(graph, conv, fused, current, report, what);
  return true;
}

bool fuse_matmul(Graph& graph, Node& mm, PassReport& report,
                 const DenseActivationOptions& options) {
  if (mm.op == OpKind::kFusedMatMul && mm.attrs.get_string("activation", "none") != "none")
    return false;
  Value* y = mm.output(0);
  if (!y) return false;
  std::optional<ActivationMatch> act = match_activation(graph, y, options);
  if (!act) return false;
  const std::string what = mm.describe();
  if (mm.op == OpKind::kGemm) {
    // FusedMatMul has no alpha/beta: fold them into constant B and C, else leave the Gemm alone.
    const float alpha = mm.attrs.get_float("alpha", 1.0f);
    const float beta = mm.attrs.get_float("beta", 1.0f);
    const Value* b = mm.input(1);
    const Value* c = mm.input(2);
    if (!y->rank_known || y->shape.size() != 2 || !y->shape[1].is_known()) return false;
    const std::int64_t n = y->shape[1].value;
    if (alpha != 1.0f && (!b || !b->is_constant() || b->constant->dtype() != DType::kF32))
      return false;
    std::optional<Tensor> bias;
    if (c) {
      if (!c->is_constant() || c->constant->dtype() != DType::kF32) return false;
      const Tensor& ct = *c->constant;
      const bool row = ct.element_count() == 1 || (ct.rank() == 1 && ct.dim(0) == n) ||
                       (ct.rank() == 2 && ct.dim(0) == 1 && ct.dim(1) == n);
      if (!row) return false;
      bias = Tensor::uninitialized(DType::kF32, {n});
      for (std::int64_t j = 0; j < n; ++j) {
        bias->data<float>()[j] = beta * ct.data<float>()[ct.element_count() == 1 ? 0 : j];
      }
    }
    if (alpha != 1.0f) {
      Tensor scaled = b->constant->clone();
      for (float& v : scaled.span<float>()) v *= alpha;
      mm.inputs[1] = graph.add_constant(graph.unique_name(b->name + "_alpha"), std::move(scaled));
    }
    mm.inputs.resize(3, nullptr);
    mm.inputs[2] =
        bias ? graph.add_constant(graph.unique_name(mm.name + "_bias"), std::move(*bias)) : nullptr;
    if (!mm.inputs[2]) mm.inputs.resize(2);
    mm.attrs.set("trans_a", mm.attrs.get_int("transA", 0));
    mm.attrs.set("trans_b", mm.attrs.get_int("transB", 0));
    for (const char* attr : {"transA", "transB", "alpha", "beta"}) mm.attrs.erase(attr);
  }
  mm.op = OpKind::kFusedMatMul;
  set_activation(mm, *act);
  take_over(graph, mm, act->nodes, act->output, report, what);
  return true;
}

// A dense node with an activation whose output is clamped next (Max / Min with a scalar, Clip
// with constant bounds) takes the clamp over; repeated clamps are intersected. Refused when the
// intervals do not overlap (then the composition is a constant, not a clamp).
bool fuse_clamp(Graph& graph, Node& dense, PassReport& report) {
  if (dense.op != OpKind::kFusedConv && dense.op != OpKind::kFusedMatMul) return false;
  if (dense.attrs.get_string("activation", "none") == "none") return false;
  bool fused_any = false;
  for (;;) {
    Value* y = dense.output(0);
    Node* next = sole_consumer(graph, y);
    if (!next || !next->output(0)) break;
    auto bounds = match_clamp(*next, y);
    if (!bounds) break;
    const float lo =
        std::max(dense.attrs.get_float("activation_clamp_min", -FLT_MAX), bounds->first);
    const float hi =
        std::min(dense.attrs.get_float("activation_clamp_max", FLT_MAX), bounds->second);
    if (lo > hi) break;
    dense.attrs.set("activation_clamp_min", lo);
    dense.attrs.set("activation_clamp_max", hi);
    const std::string what = dense.describe();
    take_over(graph, dense, {next}, next->outputs[0], report, str_cat(what, " (clamp)"));
    fused_any = true;
  }
  return fused_any;
}

class FuseDenseActivationPass final : public Pass {
 public:
  explicit FuseDenseActivationPass(DenseActivationOptions options) : options_(options) {}

  std::string_view name() const override { return "fuse_dense_activation"; }

  Status apply(Graph& graph, PassReport& report) override {
    // Only activation nodes are removed below, so the dense nodes collected here stay valid.
    std::vector<Node*> dense;
    for (Node* node : graph.nodes()) {
      if (op_family(node->op) == OpFamily::kDense) dense.push_back(node);
    }
    for (Node* node : dense) {
      switch (node->op) {
        case OpKind::kConv:
        case OpKind::kFusedConv: fuse_conv(graph, *node, report, options_); break;
        case OpKind::kGemm:
        case OpKind::kMatMul:
        case OpKind::kFusedMatMul: fuse_matmul(graph, *node, report, options_); break;
        default: break;
      }
      fuse_clamp(graph, *node, report);
    }
    graph.prune_unused_values();
    return Status::ok();
  }

 private:
  DenseActivationOptions options_;
};

}  // namespace

std::unique_ptr<Pass> make_fuse_dense_activation_pass(DenseActivationOptions options) {
  return std::make_unique<FuseDenseActivationPass>(options);
}

}  // namespace voxrt::ir
