#include "ir/passes/matmul_add_to_gemm.h"

namespace voxrt::ir {
namespace {

std::vector<std::string> origin_of(const Node& node) {
  return node.origin.empty() ? std::vector<std::string>{node.name} : node.origin;
}

// Bias values of a constant shaped [N] or [1, ..., 1, N] whose rank does not exceed `out_rank`.
std::optional<Tensor> row_bias(const Value* value, std::int64_t n, std::size_t out_rank) {
  if (!value || !value->is_constant() || value->constant->dtype() != DType::kF32)
    return std::nullopt;
  const Tensor& t = *value->constant;
  if (t.rank() == 0 || t.rank() > out_rank || t.dims().back() != n || t.element_count() != n)
    return std::nullopt;
  return t.reshaped({n}).value();
}

class MatMulAddToGemmPass final : public Pass {
 public:
  std::string_view name() const override { return "matmul_add_to_gemm"; }

  Status apply(Graph& graph, PassReport& report) override {
    std::vector<Node*> candidates;
    for (Node* node : graph.nodes()) {
      if (node->op == OpKind::kMatMul || node->op == OpKind::kFusedMatMul)
        candidates.push_back(node);
    }
    for (Node* mm : candidates) {
      if (mm->op == OpKind::kFusedMatMul &&
          (mm->input(2) || mm->attrs.get_string("activation", "none") != "none")) {
        continue;
      }
      const Value* w = mm->input(1);
      Value* y = mm->output(0);
      if (!w || !w->is_constant() || w->constant->rank() != 2 || !y || !y->rank_known) continue;
      if (graph.is_graph_output(y)) continue;
      const std::vector<Node*> users = graph.consumers(y);
      if (users.size() != 1 || users[0]->op != OpKind::kAdd || users[0]->inputs.size() != 2)
        continue;
      Node* add = users[0];
      if (!add->output(0)) continue;
      const Value* other = add->inputs[0] == y ? add->inputs[1] : add->inputs[0];
      if (other == y) continue;
      const bool trans_b = mm->op == OpKind::kFusedMatMul && mm->attrs.get_int("trans_b", 0) != 0;
      const std::int64_t n = trans_b ? w->constant->dim(0) : w->constant->dim(1);
      std::optional<Tensor> bias = row_bias(other, n, y->shape.size());
      if (!bias) continue;
      const std::string what = mm->describe();
      mm->op = OpKind::kFusedMatMul;
      mm->inputs.resize(3, nullptr);
      mm->inputs[2] = graph.add_constant(graph.unique_name(mm->name + "_bias"), bias->clone());
      if (!mm->attrs.has("activation")) mm->attrs.set("activation", std::string("none"));
      if (mm->origin.empty()) mm->origin.push_back(mm->name);
      for (const std::string& name : origin_of(*add)) mm->origin.push_back(name);
      mm->outputs[0] = add->outputs[0];
      mm->outputs[0]->producer = mm;
      report.changes.push_back(
          str_cat("fused ", what, " + Add '", add->name, "' into FusedMatMul with bias"));
      graph.remove_node(add);
    }
    graph.prune_unused_values();
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_matmul_add_to_gemm_pass() {
  return std::make_unique<MatMulAddToGemmPass>();
}

}  // namespace voxrt::ir
