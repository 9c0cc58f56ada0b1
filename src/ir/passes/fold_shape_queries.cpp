#include "ir/passes/fold_shape_queries.h"

#include "ir/shape_inference/data_movement.h"

namespace voxrt::ir {

namespace {

// The constant a Gather of a Shape picks, or nullopt when a picked dim is unknown.
std::optional<Tensor> gathered_dims(const Node& gather) {
  const Value* shape = gather.input(0);
  const Value* indices = gather.input(1);
  if (!shape || !indices || shape->is_constant() || !indices->is_constant()) return std::nullopt;
  const Node* shape_node = shape->producer;
  if (!shape_node || shape_node->op != OpKind::kShape) return std::nullopt;
  const Value* x = shape_node->input(0);
  if (!x || !x->rank_known || gather.attrs.get_int("axis", 0) != 0) return std::nullopt;
  const auto [begin, end] = shape_op_range(*shape_node, static_cast<std::int64_t>(x->shape.size()));
  const std::int64_t length = end - begin;
  const Tensor& idx = *indices->constant;
  if (idx.rank() > 1 || (idx.dtype() != DType::kI64 && idx.dtype() != DType::kI32))
    return std::nullopt;
  std::vector<std::int64_t> picked;
  for (std::int64_t i = 0; i < idx.element_count(); ++i) {
    std::int64_t k = idx.element_as_i64(i);
    if (k < 0) k += length;
    if (k < 0 || k >= length) return std::nullopt;  // shape inference reports the error
    const Dim& d = x->shape[static_cast<std::size_t>(begin + k)];
    if (!d.is_known()) return std::nullopt;
    picked.push_back(d.value);
  }
  if (idx.rank() == 0) return Tensor::scalar_i64(picked[0]);
  Tensor out = Tensor::uninitialized(DType::kI64, {static_cast<std::int64_t>(picked.size())});
  std::copy(picked.begin(), picked.end(), out.data<std::int64_t>());
  return out;
}

// The Reshape's shape with its single unknown 1-element piece as -1, or nullopt.
std::optional<Tensor> reshape_with_one_inferred_dim(const Node& reshape) {
  const Value* shape = reshape.input(1);
  if (!shape || shape->is_constant() || reshape.attrs.get_int("allowzero", 0) != 0)
    return std::nullopt;
  const Node* concat = shape->producer;
  if (!concat || concat->op != OpKind::kConcat) return std::nullopt;
  std::vector<std::int64_t> dims;
  int unknown = -1;
  for (std::size_t i = 0; i < concat->inputs.size(); ++i) {
    const Value* piece = concat->input(i);
    if (!piece || !piece->rank_known || piece->shape.size() != 1 || !piece->shape[0].is_known() ||
        piece->shape[0].value != 1)
      return std::nullopt;
    if (piece->is_constant()) {
      const std::int64_t v = piece->constant->element_as_i64(0);
      if (v == -1) return std::nullopt;  // already has the one inferred dim
      dims.push_back(v);
      continue;
    }
    if (unknown >= 0) return std::nullopt;  // two unknowns: not decidable here
    unknown = static_cast<int>(i);
    dims.push_back(-1);
  }
  if (unknown < 0) return std::nullopt;  // constant folding's job
  Tensor out = Tensor::uninitialized(DType::kI64, {static_cast<std::int64_t>(dims.size())});
  std::copy(dims.begin(), dims.end(), out.data<std::int64_t>());
  return out;
}

class FoldShapeQueriesPass final : public Pass {
 public:
  std::string_view name() const override { return "fold_shape_queries"; }

  Status apply(Graph& graph, PassReport& report) override {
    for (Node* node : graph.nodes()) {
      if (node->op == OpKind::kGather) {
        Value* out = node->output(0);
        if (!out || graph.is_graph_output(out)) continue;
        auto folded = gathered_dims(*node);
        if (!folded) continue;
        const std::string what = node->describe();
        Value* constant = graph.add_constant(out->name + "_known_dims", std::move(*folded));
        graph.replace_all_uses(out, constant);
        graph.remove_node(node);
        report.changes.push_back(str_cat("folded ", what, " into ",
                                         constant->constant->element_count(),
                                         " known dim(s) of a partly known shape"));
      } else if (node->op == OpKind::kReshape) {
        auto shape = reshape_with_one_inferred_dim(*node);
        if (!shape) continue;
        Value* constant = graph.add_constant(node->name + "_shape_inferred", std::move(*shape));
        node->inputs[1] = constant;
        report.changes.push_back(str_cat(node->describe(),
                                         ": the one shape entry computed at run time is now -1 "
                                         "(inferred from the element count)"));
      }
    }
    return Status::ok();
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_shape_queries_pass() {
  return std::make_unique<FoldShapeQueriesPass>();
}

}  // namespace voxrt::ir
