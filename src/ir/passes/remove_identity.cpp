#include "ir/passes/remove_identity.h"

#include <algorithm>

namespace voxrt::ir {

namespace {

// Equal dims that are known, or the same named symbol (an unnamed unknown proves nothing).
bool provably_same_shape(const Value& a, const Value& b) {
  if (!a.rank_known || !b.rank_known || a.shape.size() != b.shape.size()) return false;
  for (std::size_t i = 0; i < a.shape.size(); ++i) {
    const Dim& x = a.shape[i];
    const Dim& y = b.shape[i];
    if (!(x == y) || (!x.is_known() && x.symbol.empty())) return false;
  }
  return true;
}

bool value_is_used(const Graph& graph, const Value* value) {
  return value && (graph.is_graph_output(value) || !graph.consumers(value).empty());
}

// Why `node` passes input 0 through unchanged, or nullptr when it may not.
const char* pass_through_reason(const Graph& graph, const Node& node) {
  const Value* in = node.input(0);
  const Value* out = node.output(0);
  if (!in || !out || in->dtype != out->dtype) return nullptr;
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    if (node.op != OpKind::kDropout || value_is_used(graph, node.outputs[i])) return nullptr;
  }
  switch (node.op) {
    case OpKind::kIdentity: return "identity";
    case OpKind::kDropout: {
      // Only at inference: a training_mode input that is not a constant false may turn it on.
      const Value* training = node.input(2);
      if (!training) return "dropout is the identity at inference";
      const bool off = training->is_constant() && training->constant->element_count() == 1 &&
                       training->constant->element_as_i64(0) == 0;
      return off ? "dropout is the identity (training_mode is false)" : nullptr;
    }
    case OpKind::kCast:
      return node.attrs.get_int("to", -1) == static_cast<std::int64_t>(in->dtype)
                 ? "cast to its own dtype"
                 : nullptr;
    case OpKind::kTranspose: {
      if (!in->rank_known) return nullptr;
      const std::vector<std::int64_t> perm = node.attrs.get_ints("perm");
      const auto rank = static_cast<std::int64_t>(in->shape.size());
      bool identity =
          node.attrs.has("perm") ? static_cast<std::int64_t>(perm.size()) == rank : rank <= 1;
      for (std::size_t i = 0; identity && i < perm.size(); ++i)
        identity = perm[i] == static_cast<std::int64_t>(i);
      return identity ? "identity permutation" : nullptr;
    }
    case OpKind::kReshape:
    case OpKind::kExpand:
      return provably_same_shape(*in, *out) ? "output shape equals input shape" : nullptr;
    default: return nullptr;
  }
}

class RemoveIdentityPass final : public Pass {
 public:
  std::string_view name() const override { return "remove_identity"; }

  Status apply(Graph& graph, PassReport& report) override {
    bool removed_any = false;
    for (Node* node : graph.nodes()) {
      const char* reason = pass_through_reason(graph, *node);
      if (!reason) continue;
      Value* in = node->inputs[0];
      Value* out = node->outputs[0];
      const std::string what = node->describe();
      if (!graph.is_graph_output(out)) {
        graph.replace_all_uses(out, in);
        graph.remove_node(node);
        report.changes.push_back(str_cat("removed ", what, " (", reason, ")"));
        removed_any = true;
        continue;
      }
      const bool input_is_pinned =
          in->is_constant() || !in->producer || graph.is_graph_output(in) ||
          std::find(graph.inputs.begin(), graph.inputs.end(), in) != graph.inputs.end();
      if (!input_is_pinned) {
        // The producer's value takes over the graph output's name.
        const std::string output_name = out->name;
        const std::string old_input_name = in->name;
        out->name = graph.unique_name(output_name + "_removed");
        in->name = output_name;
        graph.replace_all_uses(out, in);
        graph.remove_node(node);
        report.changes.push_back(str_cat("removed ", what, " (", reason, "); '", old_input_name,
                                         "' renamed to graph output '", output_name, "'"));
        removed_any = true;
        continue;
      }
      if (node->op != OpKind::kIdentity) {
        report.changes.push_back(str_cat("replaced ", what, " (", reason,
                                         ") by Identity: its output '", out->name,
                                         "' is a graph output fed by '", in->name, "'"));
        node->op = OpKind::kIdentity;
        node->inputs = {in};
        for (std::size_t i = 1; i < node->outputs.size(); ++i) {
          if (node->outputs[i]) node->outputs[i]->producer = nullptr;
        }
        node->outputs = {out};
        node->attrs = Attributes{};
      }
    }
    if (removed_any) graph.prune_unused_values();
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_remove_identity_pass() {
  return std::make_unique<RemoveIdentityPass>();
}

}  // namespace voxrt::ir
