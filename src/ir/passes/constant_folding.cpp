#include "ir/passes/constant_folding.h"

#include <unordered_map>

#include "ir/shape_inference.h"

namespace voxrt::ir {

namespace {

// Rounds of folding; each round folds whole chains, so only nested Ifs need more than two.
constexpr int kMaxRounds = 16;

std::vector<ValueInfo> input_infos(const Node& node) {
  std::vector<ValueInfo> infos;
  for (const Value* in : node.inputs) {
    ValueInfo info;
    if (!in) {
      info.present = false;
    } else {
      info.dtype = in->dtype;
      info.shape = in->shape;
      info.rank_known = in->rank_known;
      info.data = in->constant ? &*in->constant : nullptr;
    }
    infos.push_back(std::move(info));
  }
  return infos;
}

// Keeps whatever is known: a dim known (or named) on either side survives.
void refine_value(Value& value, const InferredOutput& inferred) {
  if (!inferred.rank_known) return;
  value.dtype = inferred.dtype;
  if (!value.rank_known || value.shape.size() != inferred.shape.size()) {
    value.shape = inferred.shape;
    value.rank_known = true;
    return;
  }
  for (std::size_t i = 0; i < value.shape.size(); ++i) {
    const Dim& d = inferred.shape[i];
    if (d.is_known() || (!value.shape[i].is_known() && !d.symbol.empty())) value.shape[i] = d;
  }
}

void make_constant(Value& value, Tensor tensor) {
  value.dtype = tensor.dtype();
  value.shape = sym_shape_from_dims(tensor.dims());
  value.rank_known = true;
  value.constant = std::move(tensor);
}

class ConstantFoldingPass final : public Pass {
 public:
  ConstantFoldingPass(NodeEvaluator evaluator, std::size_t max_folded_bytes)
      : evaluator_(std::move(evaluator)), max_folded_bytes_(max_folded_bytes) {}

  std::string_view name() const override { return "constant_folding"; }

  Status apply(Graph& graph, PassReport& report) override {
    bool changed_any = false;
    for (int round = 0; round < kMaxRounds; ++round) {
      VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.topological_order());
      bool changed = false;
      for (Node* node : order) {
        bool folded = false;
        if (node->op == OpKind::kIf) {
          VOXRT_ASSIGN_OR_RETURN(folded, inline_constant_if(graph, node, report));
        } else {
          folded = fold_node(graph, node, report);
        }
        changed = changed || folded;
      }
      changed_any = changed_any || changed;
      if (!changed) break;
    }
    if (changed_any) graph.prune_unused_values();
    return Status::ok();
  }

 private:
  bool fold_node(Graph& graph, Node* node, PassReport& report) const {
    if (node->outputs.empty()) return false;
    for (const auto& [attr_name, attr] : node->attrs.all()) {
      if (std::holds_alternative<std::shared_ptr<Graph>>(attr)) return false;
    }
    const std::vector<ValueInfo> infos = input_infos(*node);
    std::vector<InferredOutput> inferred;
    // A node that shape inference rejects is left for infer_graph to report.
    if (!infer_outputs(*node, infos, inferred).is_ok()) return false;
    bool all_data = true;
    for (std::size_t i = 0; i < node->outputs.size(); ++i) {
      if (!node->outputs[i]) continue;
      refine_value(*node->outputs[i], inferred[i]);
      all_data = all_data && inferred[i].data.has_value();
    }
    const std::string what = node->describe();
    if (all_data) {
      for (std::size_t i = 0; i < node->outputs.size(); ++i) {
        if (node->outputs[i]) make_constant(*node->outputs[i], std::move(*inferred[i].data));
      }
      graph.remove_node(node);
      report.changes.push_back(str_cat("folded ", what, " into constants (known from shapes)"));
      return true;
    }
    std::vector<const Tensor*> args;
    for (const Value* in : node->inputs) {
      if (in && !in->is_constant()) return false;
      args.push_back(in ? &*in->constant : nullptr);
    }
    if (!evaluator_) return false;
    std::size_t total_bytes = 0;
    for (std::size_t i = 0; i < node->outputs.size(); ++i) {
      if (!node->outputs[i]) continue;
      std::optional<Dims> dims =
          inferred[i].rank_known ? known_dims(inferred[i].shape) : std::nullopt;
      if (!dims) return false;
      total_bytes +=
          static_cast<std::size_t>(element_count(*dims)) * dtype_size_bytes(inferred[i].dtype);
    }
    // Too large to store in the engine: computed at run time instead.
    if (total_bytes > max_folded_bytes_) return false;
    Expected<std::vector<Tensor>> results = evaluator_(*node, args);
    if (!results || results->size() < node->outputs.size()) return false;
    for (std::size_t i = 0; i < node->outputs.size(); ++i) {
      if (node->outputs[i]) make_constant(*node->outputs[i], std::move((*results)[i]));
    }
    graph.remove_node(node);
    report.changes.push_back(
        str_cat("folded ", what, " into constants (evaluated, ", total_bytes, " bytes)"));
    return true;
  }

  // Copies the taken branch into `graph` in place of the If (see the If convention in graph.h).
  static Expected<bool> inline_constant_if(Graph& graph, Node* node, PassReport& report) {
    const Value* condition = node->input(0);
    if (!condition || !condition->is_constant() || condition->constant->element_count() < 1)
      return false;
    const bool taken = condition->constant->element_as_i64(0) != 0;
    const char* branch_name = taken ? "then_branch" : "else_branch";
    std::shared_ptr<Graph> branch = node->attrs.get_graph(branch_name);
    if (!branch) return invalid_argument(node->describe(), ": has no ", branch_name);
    if (branch->inputs.size() + 1 != node->inputs.size() ||
        branch->outputs.size() != node->outputs.size()) {
      return invalid_argument(node->describe(), ": ", branch_name, " has ", branch->inputs.size(),
                              " inputs and ", branch->outputs.size(), " outputs, the If has ",
                              node->inputs.size() - 1, " captured values and ",
                              node->outputs.size(), " outputs");
    }
    VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> branch_order, branch->topological_order());
    std::unordered_map<const Value*, Value*> mapping;
    for (std::size_t i = 0; i < branch->inputs.size(); ++i)
      mapping[branch->inputs[i]] = node->inputs[i + 1];
    // Check before changing anything that every branch value can be bound.
    for (const Node* n : branch_order) {
      for (const Value* in : n->inputs) {
        if (in && !in->is_constant() && !in->producer && !mapping.count(in)) {
          return invalid_argument(node->describe(), ": ", n->describe(), " in ", branch_name,
                                  " reads '", in->name,
                                  "', which the branch neither makes nor takes as input");
        }
      }
    }
    const std::string prefix = node->name + "/";
    const std::string what = node->describe();
    const std::vector<Value*> if_outputs = node->outputs;
    // Outputs made by a branch node are written straight into the If's output values.
    std::vector<bool> bound(if_outputs.size(), false);
    for (std::size_t j = 0; j < if_outputs.size(); ++j) {
      const Value* bv = branch->outputs[j];
      if (if_outputs[j] && bv->producer && !bv->is_constant() && !mapping.count(bv)) {
        mapping[bv] = if_outputs[j];
        bound[j] = true;
      }
    }
    graph.remove_node(node);
    const auto outer_value = [&](const Value* bv) -> Value* {
      if (!bv) return nullptr;
      auto it = mapping.find(bv);
      if (it != mapping.end()) return it->second;
      Value* v = bv->is_constant()
                     ? graph.add_constant(graph.unique_name(prefix + bv->name), *bv->constant)
                     : graph.add_value(graph.unique_name(prefix + bv->name), bv->dtype, bv->shape,
                                       bv->rank_known);
      mapping[bv] = v;
      return v;
    };
    for (const Node* n : branch_order) {
      std::vector<Value*> ins, outs;
      for (const Value* in : n->inputs) ins.push_back(outer_value(in));
      for (const Value* out : n->outputs) outs.push_back(outer_value(out));
      Node* copy = graph.add_node(n->op, graph.unique_name(prefix + n->name), ins, outs);
      copy->attrs = n->attrs;
      copy->opset = n->opset;
      copy->origin = n->origin.empty() ? std::vector<std::string>{n->name} : n->origin;
    }
    for (std::size_t j = 0; j < if_outputs.size(); ++j) {
      if (!if_outputs[j] || bound[j]) continue;
      // The branch passes an input or constant straight through.
      Value* source = outer_value(branch->outputs[j]);
      if (graph.is_graph_output(if_outputs[j])) {
        graph.add_node(OpKind::kIdentity, graph.unique_name(prefix + "passthrough"), {source},
                       {if_outputs[j]});
      } else {
        graph.replace_all_uses(if_outputs[j], source);
      }
    }
    report.changes.push_back(str_cat("inlined the ", branch_name, " of ", what,
                                     " (condition is constant ", taken ? "true" : "false",
                                     "): ", branch_order.size(), " nodes"));
    return true;
  }

  NodeEvaluator evaluator_;
  std::size_t max_folded_bytes_;
};

}  // namespace

std::unique_ptr<Pass> make_constant_folding_pass(NodeEvaluator evaluator,
                                                 std::size_t max_folded_bytes) {
  return std::make_unique<ConstantFoldingPass>(std::move(evaluator), max_folded_bytes);
}

}  // namespace voxrt::ir
