#include "ir/passes/recognize_attention.h"

#include <cmath>
#include <limits>
#include <optional>

#include "ir/passes/pattern_helpers.h"

namespace voxrt::ir {
namespace {

constexpr int kMaxChainSteps = 16;
constexpr int kMaxLookBack = 12;

bool is_plain_fused_matmul(const Node& node) {
  return node.op == OpKind::kFusedMatMul && node.attrs.get_int("trans_a", 0) == 0 &&
         node.attrs.get_string("activation", "none") == "none" && !node.input(2) &&
         !node.attrs.has("activation_clamp_min") && !node.attrs.has("activation_clamp_max");
}

// MatMul(Q, K^T) with both operands computed, or FusedMatMul(Q, K, trans_b = 1) with nothing else.
bool is_score_product(const Node& node) {
  const Value* a = node.input(0);
  const Value* b = node.input(1);
  if (!a || !b || a->is_constant() || b->is_constant() || !is_floating(a->dtype)) return false;
  if (node.op == OpKind::kMatMul) return node.inputs.size() == 2;
  return is_plain_fused_matmul(node) && node.attrs.get_int("trans_b", 0) == 1;
}

// Whether `value` is computed from a score product through the ops a score chain may hold.
bool leads_to_product(const Value* value, int depth) {
  if (!value || !value->producer || depth > kMaxLookBack) return false;
  const Node& node = *value->producer;
  if (is_score_product(node)) return true;
  switch (node.op) {
    case OpKind::kReshape: return leads_to_product(node.input(0), depth + 1);
    case OpKind::kMul:
      return (scalar_constant(node.input(1), 4) && leads_to_product(node.input(0), depth + 1)) ||
             (scalar_constant(node.input(0), 4) && leads_to_product(node.input(1), depth + 1));
    case OpKind::kDiv:
      return scalar_constant(node.input(1), 4) && leads_to_product(node.input(0), depth + 1);
    case OpKind::kAdd:
      return leads_to_product(node.input(0), depth + 1) ||
             leads_to_product(node.input(1), depth + 1);
    case OpKind::kWhere:
      return (scalar_constant(node.input(2), 4) && leads_to_product(node.input(1), depth + 1)) ||
             (scalar_constant(node.input(1), 4) && leads_to_product(node.input(2), depth + 1));
    default: return false;
  }
}

// An additive term of the scores, `coefficient` times `value`, added where the scores had rank
// `rank`.
struct Term {
  Value* value = nullptr;
  double coefficient = 1.0;
  std::size_t rank = 0;
};

struct Match {
  Node* product = nullptr;
  Node* softmax = nullptr;
  Node* pv = nullptr;
  std::vector<Node*> chain;    // from the product towards the softmax
  std::vector<Node*> dropped;  // a max shift before the softmax (Sub, ReduceMax)
  double scale = 1.0;
  std::vector<Term> terms;
  Value* condition = nullptr;   // Where's condition
  bool condition_keeps = true;  // true: condition true keeps the score
  float fill = 0.0f;
  std::size_t condition_rank = 0;
  // The product's operands with the scalar Muls of peel_operand_scales taken off, and those Muls.
  Value* operands[2] = {nullptr, nullptr};
  std::vector<Node*> operand_scales;
};

std::optional<std::size_t> rank_of(const Value* value) {
  if (!value || !value->rank_known) return std::nullopt;
  return value->shape.size();
}

int chain_input(const Node& node) {
  switch (node.op) {
    case OpKind::kReshape: return 0;
    case OpKind::kMul:
      if (scalar_constant(node.input(1), 4) && leads_to_product(node.input(0), 0)) return 0;
      if (scalar_constant(node.input(0), 4) && leads_to_product(node.input(1), 0)) return 1;
      return -1;
    case OpKind::kDiv: return scalar_constant(node.input(1), 4) ? 0 : -1;
    case OpKind::kAdd:
      if (leads_to_product(node.input(0), 0)) return 0;
      if (leads_to_product(node.input(1), 0)) return 1;
      return -1;
    case OpKind::kWhere:
      if (scalar_constant(node.input(2), 4) && leads_to_product(node.input(1), 0)) return 1;
      if (scalar_constant(node.input(1), 4) && leads_to_product(node.input(2), 0)) return 2;
      return -1;
    default: return -1;
  }
}

// x - ReduceMax(x, last axis, keepdims): the shift some exporters write before a Softmax
// (torchaudio's wav2vec2), which Softmax does itself. Returns the ReduceMax node.
Node* max_shift(const Graph& graph, const Node& sub) {
  if (sub.op != OpKind::kSub || sub.inputs.size() != 2) return nullptr;
  const Value* x = sub.input(0);
  Node* max = sub.input(1) ? sub.input(1)->producer : nullptr;
  if (!x || !max || max->op != OpKind::kReduceMax || max->input(0) != x ||
      max->attrs.get_int("keepdims", 1) != 1 || !rank_of(x))
    return nullptr;
  std::vector<std::int64_t> axes = max->attrs.get_ints("axes");
  if (axes.empty() && max->input(1) && max->input(1)->is_constant())
    axes = max->input(1)->constant->to_i64_vector();
  const auto last = static_cast<std::int64_t>(x->shape.size()) - 1;
  if (axes.size() != 1 || (axes[0] != -1 && axes[0] != last)) return nullptr;
  if (graph.is_graph_output(sub.input(1)) || graph.consumers(sub.input(1)).size() != 1 ||
      graph.consumers(x).size() != 2)
    return nullptr;
  return max;
}

// torch 2.x's SDPA export scales Q and K^T by sqrt(scale) each before the product (two Muls by
// a scalar constant): (a Q)(b K^T) = a b (Q K^T), so a scalar Mul on an operand that only the
// product reads folds into the Attention's scale instead of running as a pass over Q or K.
void peel_operand_scales(const Graph& graph, Match& match) {
  Node& product = *match.product;
  for (std::size_t i = 0; i < 2; ++i) {
    Value* operand = product.input(i);
    match.operands[i] = operand;
    Node* mul = operand->producer;
    if (!mul || mul->op != OpKind::kMul || mul->inputs.size() != 2 ||
        sole_consumer(graph, operand) != &product || !rank_of(operand))
      continue;
    for (std::size_t side = 0; side < 2; ++side) {
      Value* x = mul->input(side);
      const std::optional<float> c = scalar_constant(mul->input(1 - side), operand->shape.size());
      if (!c || !std::isfinite(*c) || !x || x->is_constant() || x->dtype != operand->dtype ||
          rank_of(x) != rank_of(operand))
        continue;
      match.scale *= *c;
      match.operands[i] = x;
      match.operand_scales.push_back(mul);
      break;
    }
  }
}

// Walks from the softmax's input back to the product, then reads the chain forwards into the
// op's normal form.
std::optional<Match> match_at(const Graph& graph, Node* softmax) {
  Match match;
  match.softmax = softmax;
  const std::optional<std::size_t> score_rank = rank_of(softmax->input(0));
  if (!score_rank) return std::nullopt;
  const auto rank = static_cast<std::int64_t>(*score_rank);
  const std::int64_t axis = softmax->attrs.get_int("axis", softmax->opset < 13 ? 1 : -1);
  if (axis != -1 && axis != rank - 1) return std::nullopt;
  match.pv = sole_consumer(graph, softmax->output(0));
  if (!match.pv || match.pv->op != OpKind::kMatMul || match.pv->input(0) != softmax->output(0) ||
      match.pv->input(1) == softmax->output(0))
    return std::nullopt;

  Value* current = softmax->input(0);
  Node* reader = softmax;
  std::vector<Node*> backwards;
  while (true) {
    Node* producer = current->producer;
    if (!producer || sole_consumer(graph, current) != reader) return std::nullopt;
    if (is_score_product(*producer)) {
      match.product = producer;
      break;
    }
    if (Node* max = reader == softmax ? max_shift(graph, *producer) : nullptr) {
      // Both read x: step over the pair as if the softmax read x itself.
      match.dropped.push_back(producer);
      match.dropped.push_back(max);
      current = producer->input(0);
      if (!current->producer || graph.is_graph_output(current)) return std::nullopt;
      const std::vector<Node*> readers = graph.consumers(current);
      if (readers.size() != 2) return std::nullopt;
      Node* next = current->producer;
      if (is_score_product(*next)) {
        match.product = next;
        break;
      }
      const int chain = chain_input(*next);
      if (chain < 0) return std::nullopt;
      backwards.push_back(next);
      reader = next;
      current = next->input(static_cast<std::size_t>(chain));
      continue;
    }
    const int chain = chain_input(*producer);
    if (chain < 0 || static_cast<int>(backwards.size()) >= kMaxChainSteps) return std::nullopt;
    backwards.push_back(producer);
    reader = producer;
    current = producer->input(static_cast<std::size_t>(chain));
  }
  match.chain.assign(backwards.rbegin(), backwards.rend());

  std::optional<std::size_t> land = rank_of(match.product->output(0));
  if (!land) return std::nullopt;
  const Value* flowing = match.product->output(0);
  for (Node* node : match.chain) {
    if (match.condition && node->op != OpKind::kReshape) return std::nullopt;  // Where is last
    const int chain = chain_input(*node);
    const Value* other = node->inputs.size() > 1 ? node->input(chain == 0 ? 1 : 0) : nullptr;
    switch (node->op) {
      case OpKind::kReshape:
        land = rank_of(node->output(0));
        if (!land) return std::nullopt;
        break;
      case OpKind::kMul:
      case OpKind::kDiv: {
        const double c = *scalar_constant(other, 4);
        const double factor = node->op == OpKind::kMul ? c : 1.0 / c;
        if (!std::isfinite(factor)) return std::nullopt;
        match.scale *= factor;
        for (Term& term : match.terms) term.coefficient *= factor;
        break;
      }
      case OpKind::kAdd:
        if (!other || other->dtype != flowing->dtype) return std::nullopt;
        match.terms.push_back({node->input(chain == 0 ? 1 : 0), 1.0, *land});
        break;
      case OpKind::kWhere: {
        Value* condition = node->input(0);
        if (!condition || condition->dtype != DType::kBool) return std::nullopt;
        match.condition = condition;
        match.condition_keeps = chain == 1;
        match.fill = *scalar_constant(node->input(chain == 1 ? 2 : 1), 4);
        match.condition_rank = *land;
        break;
      }
      default: return std::nullopt;
    }
    flowing = node->output(0);
  }
  if (*land != *score_rank) return std::nullopt;
  peel_operand_scales(graph, match);
  return match;
}

// The rank-4 [B, H, S, D] value that a rank-3 [B*H, S, D] `value` was reshaped from, when the
// dims prove the Reshape only merged the two leading axes.
Value* lift_heads(const Value* value) {
  if (!value || !value->producer || value->producer->op != OpKind::kReshape) return nullptr;
  Value* source = value->producer->input(0);
  if (!rank_of(source) || source->shape.size() != 4 || !rank_of(value) || value->shape.size() != 3)
    return nullptr;
  const SymShape& s = source->shape;
  const SymShape& v = value->shape;
  if (!same_dim(s[2], v[1]) || !same_dim(s[3], v[2])) return nullptr;
  if (!s[0].is_known() || !s[1].is_known() || !v[0].is_known() ||
      s[0].value * s[1].value != v[0].value)
    return nullptr;
  return source;
}

// K as [.., S, D] from the product's second operand.
struct KeySource {
  Value* value = nullptr;  // K itself when it exists in the graph
  Value* transposed_from = nullptr;
  std::vector<std::int64_t> perm;  // Transpose(transposed_from, perm) gives K (when value == null)
};

KeySource key_source(const Node& product, Value* operand) {
  KeySource key;
  if (product.op == OpKind::kFusedMatMul) {
    key.value = operand;
    return key;
  }
  const std::size_t rank = operand->shape.size();
  const Node* transpose = operand->producer;
  if (transpose && transpose->op == OpKind::kTranspose) {
    std::vector<std::int64_t> perm = transpose_perm(*transpose);
    if (perm.size() == rank) {
      std::swap(perm[rank - 1], perm[rank - 2]);
      bool identity = true;
      for (std::size_t i = 0; i < rank; ++i)
        identity = identity && perm[i] == static_cast<std::int64_t>(i);
      if (identity) {
        key.value = transpose->input(0);
      } else {
        key.transposed_from = transpose->input(0);
        key.perm = perm;
      }
      return key;
    }
  }
  key.transposed_from = operand;
  for (std::size_t i = 0; i < rank; ++i) key.perm.push_back(static_cast<std::int64_t>(i));
  std::swap(key.perm[rank - 1], key.perm[rank - 2]);
  return key;
}

class RecognizeAttentionPass final : public Pass {
 public:
  std::string_view name() const override { return "recognize_attention"; }

  Status apply(Graph& graph, PassReport& report) override {
    bool rewrote_any = false;
    for (bool rewrote = true; rewrote;) {
      rewrote = false;
      for (Node* node : graph.nodes()) {
        if (node->op != OpKind::kSoftmax) continue;
        std::optional<Match> match = match_at(graph, node);
        if (!match || !rewrite(graph, *match, report)) continue;
        rewrote = rewrote_any = true;
        break;
      }
    }
    if (rewrote_any) graph.prune_unused_values();
    return Status::ok();
  }

 private:
  Node* add(Graph& graph, OpKind op, const std::string& base, std::vector<Value*> inputs,
            DType dtype) {
    Value* out = graph.add_value(graph.unique_name(base), dtype, {}, false);
    Node* node = graph.add_node(op, graph.unique_name(base), std::move(inputs), {out});
    node->opset = 17;
    return node;
  }
  Value* i64_constant(Graph& graph, const std::string& base, std::vector<std::int64_t> values) {
    const auto count = static_cast<std::int64_t>(values.size());
    return graph.add_constant(graph.unique_name(base), Tensor::from_vector({count}, values));
  }

  // K as [.., S, D] from the product's second operand, inserting a Transpose when the graph
  // only has K^T or a permutation of it.
  Value* key_operand(Graph& graph, const Node& product, Value* operand, const std::string& base) {
    KeySource key = key_source(product, operand);
    if (key.value) return key.value;
    Node* t = add(graph, OpKind::kTranspose, base + "_key", {key.transposed_from},
                  key.transposed_from->dtype);
    t->attrs.set("perm", key.perm);
    return t->output(0);
  }

  // Every Reshape of the score chain must be a view between the folded scores (the product's
  // [B*H, T, S]) and [B, H, T, S] with `heads` = {B, H}; rank-4 products allow no change at all.
  static bool reshapes_consistent(const Match& match, const SymShape& product_shape,
                                  const Dim* heads) {
    for (const Node* node : match.chain) {
      if (node->op != OpKind::kReshape) continue;
      const SymShape& out = node->output(0)->shape;
      SymShape expected = product_shape;
      if (out.size() == 4 && product_shape.size() == 3) {
        if (!heads) return false;
        expected = {heads[0], heads[1], product_shape[1], product_shape[2]};
      }
      if (out.size() != expected.size()) return false;
      for (std::size_t i = 0; i < out.size(); ++i)
        if (!same_dim(out[i], expected[i])) return false;
    }
    return true;
  }

  bool rewrite(Graph& graph, Match& match, PassReport& report) {
    Node& product = *match.product;
    const std::size_t rank = product.output(0)->shape.size();
    if (rank != 3 && rank != 4) return false;
    Value* q = match.operands[0];
    Value* k_operand = match.operands[1];
    Value* v = match.pv->input(1);
    if (!rank_of(v) || v->shape.size() != rank || v->dtype != q->dtype ||
        k_operand->dtype != q->dtype)
      return false;
    const std::string base = match.softmax->name + "_attention";

    // Lifting needs every operand and every term of the folded (rank-3) scores to broadcast the
    // same way in rank 4; otherwise the folded heads run as one batch.
    const SymShape& product_shape = product.output(0)->shape;
    if (match.softmax->input(0)->shape.size() != rank) return false;
    bool lifted = false;
    Value* q4 = nullptr;
    Value* v4 = nullptr;
    Value* k4 = nullptr;
    if (rank == 3) {
      const KeySource key = key_source(product, k_operand);
      q4 = lift_heads(q);
      v4 = lift_heads(v);
      k4 = key.value ? lift_heads(key.value) : nullptr;
      lifted = q4 && v4 && k4 && same_dim(q4->shape[0], k4->shape[0]) &&
               same_dim(q4->shape[0], v4->shape[0]) && is_fully_known(match.pv->output(0)->shape);
      for (const Term& term : match.terms) {
        if (term.rank == 3 && !broadcasts_in_both(term.value)) lifted = false;
      }
      if (match.condition && match.condition_rank == 3 && !broadcasts_in_both(match.condition))
        lifted = false;
      if (lifted && !reshapes_consistent(match, product_shape, q4->shape.data())) lifted = false;
      if (!lifted) {
        for (const Term& term : match.terms)
          if (term.rank == 4) return false;
        if (match.condition && match.condition_rank == 4) return false;
        for (const Node* node : match.chain)
          if (node->op == OpKind::kReshape && node->output(0)->shape.size() != 3) return false;
        if (!reshapes_consistent(match, product_shape, nullptr)) return false;
      }
    } else if (!reshapes_consistent(match, product_shape, nullptr)) {
      return false;
    }

    // From here on the graph changes.
    std::vector<std::string> origin;
    auto note = [&](const Node* node) {
      if (node->origin.empty()) {
        origin.push_back(node->name);
      } else {
        origin.insert(origin.end(), node->origin.begin(), node->origin.end());
      }
    };
    for (const Node* node : match.operand_scales) note(node);
    note(&product);
    for (const Node* node : match.chain) note(node);
    for (const Node* node : match.dropped) note(node);
    note(match.softmax);
    note(match.pv);

    Value *q_in = q, *k_in = nullptr, *v_in = v;
    if (rank == 4) {
      k_in = key_operand(graph, product, k_operand, base);
    } else if (lifted) {
      q_in = q4;
      v_in = v4;
      k_in = k4;
    } else {
      Value* k3 = key_operand(graph, product, k_operand, base);
      Value* axes = i64_constant(graph, base + "_axes", {0});
      auto unsqueeze = [&](Value* x, const char* what) {
        return add(graph, OpKind::kUnsqueeze, base + what, {x, axes}, x->dtype)->output(0);
      };
      q_in = unsqueeze(q, "_query");
      k_in = unsqueeze(k3, "_key4");
      v_in = unsqueeze(v, "_value");
    }

    // Terms: scaled by their coefficients, the first two as bias and (float) mask, the rest
    // summed into the bias.
    std::vector<Value*> terms;
    for (const Term& term : match.terms) {
      Value* value = term.value;
      if (term.coefficient != 1.0) {
        Value* c = graph.add_constant(graph.unique_name(base + "_term_scale"),
                                      Tensor::scalar_f32(static_cast<float>(term.coefficient)));
        value = add(graph, OpKind::kMul, base + "_term", {value, c}, value->dtype)->output(0);
      }
      terms.push_back(value);
    }
    Value* mask = nullptr;
    Value* bias = nullptr;
    if (match.condition) {
      mask = match.condition;
      if (!match.condition_keeps)
        mask = add(graph, OpKind::kNot, base + "_keep", {mask}, DType::kBool)->output(0);
    } else if (terms.size() >= 2) {
      mask = terms.back();
      terms.pop_back();
    }
    for (Value* term : terms) {
      bias = bias ? add(graph, OpKind::kAdd, base + "_bias", {bias, term}, term->dtype)->output(0)
                  : term;
    }

    Value* out = match.pv->output(0);
    for (Node* node : match.chain) graph.remove_node(node);
    for (Node* node : match.dropped) graph.remove_node(node);
    graph.remove_node(match.softmax);
    graph.remove_node(match.pv);
    graph.remove_node(&product);
    for (Node* node : match.operand_scales) graph.remove_node(node);

    std::vector<Value*> inputs{q_in, k_in, v_in};
    if (mask || bias) inputs.push_back(mask);
    if (bias) inputs.push_back(bias);
    const bool direct = rank == 4;
    Value* attention_out =
        direct ? out : graph.add_value(graph.unique_name(base + "_out"), q->dtype, {}, false);
    Node* attention =
        graph.add_node(OpKind::kAttention, graph.unique_name(base), inputs, {attention_out});
    attention->opset = 1;
    attention->attrs.set("scale", static_cast<float>(match.scale));
    if (match.condition && match.fill != -std::numeric_limits<float>::infinity())
      attention->attrs.set("mask_fill", match.fill);
    attention->origin = origin;
    if (!direct) {
      Node* back;
      if (lifted) {
        const std::optional<Dims> dims = known_dims(out->shape);
        back = graph.add_node(OpKind::kReshape, graph.unique_name(base + "_fold"),
                              {attention_out, i64_constant(graph, base + "_shape", *dims)}, {out});
      } else {
        back = graph.add_node(OpKind::kSqueeze, graph.unique_name(base + "_squeeze"),
                              {attention_out, i64_constant(graph, base + "_axes", {0})}, {out});
      }
      back->opset = 17;
      back->origin = {attention->name};
    }
    report.changes.push_back(str_cat("recognized Attention '", attention->name, "' (scale ",
                                     match.scale, bias ? ", bias" : "",
                                     mask ? (match.condition ? ", bool mask" : ", float mask") : "",
                                     rank == 4 ? ""
                                     : lifted  ? ", heads lifted from the folded batch"
                                               : ", folded heads as one batch",
                                     ") from ", origin.size(), " nodes"));
    return true;
  }

  // A rank-3 term of the folded scores [B*H, T, S] broadcasts the same way against [B, H, T, S]
  // when its leading dim is 1.
  static bool broadcasts_in_both(const Value* value) {
    if (!rank_of(value)) return false;
    if (value->shape.size() <= 2) return true;
    return value->shape.size() == 3 && value->shape[0].is_known() && value->shape[0].value == 1;
  }
};

}  // namespace

std::unique_ptr<Pass> make_recognize_attention_pass() {
  return std::make_unique<RecognizeAttentionPass>();
}

}  // namespace voxrt::ir
