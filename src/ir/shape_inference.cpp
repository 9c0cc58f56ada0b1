#include "ir/shape_inference.h"

#include <string_view>

namespace voxrt::ir {

Status infer_outputs(const Node& node, std::span<const ValueInfo> inputs,
                     std::vector<InferredOutput>& outputs) {
  outputs.assign(node.outputs.size(), InferredOutput{});
  switch (op_family(node.op)) {
    case OpFamily::kElementwise: return infer_elementwise(node, inputs, outputs);
    case OpFamily::kReduction: return infer_reduction(node, inputs, outputs);
    case OpFamily::kDataMovement: return infer_data_movement(node, inputs, outputs);
    case OpFamily::kPooling: return infer_pooling(node, inputs, outputs);
    case OpFamily::kDense: return infer_dense(node, inputs, outputs);
    case OpFamily::kRecurrent: return infer_recurrent(node, inputs, outputs);
    case OpFamily::kControlFlow: return infer_control_flow(node, inputs, outputs);
    case OpFamily::kAttention: return infer_attention(node, inputs, outputs);
  }
  return internal_error(node.describe(), ": no shape inference for family");
}

namespace {

// Writes dtypes and shapes into an If's branch graphs, from the values the node captures, so
// that the kernels chosen for branch nodes see the real input dtypes (a value without ONNX type
// information would otherwise read as f32). Done at build time only, on the builder's own graph.
// A branch that a known condition never takes may not infer (its shapes can be impossible):
// its errors are ignored.
Status infer_branch_graphs(const Node& if_node, std::span<const ValueInfo> inputs) {
  const bool cond_known = !inputs.empty() && inputs[0].data != nullptr;
  const bool taken_then =
      cond_known && inputs[0].data->element_count() == 1 && inputs[0].data->element_as_i64(0) != 0;
  for (const char* name : {"then_branch", "else_branch"}) {
    std::shared_ptr<Graph> branch = if_node.attrs.get_graph(name);
    if (!branch || branch->inputs.size() + 1 != inputs.size()) continue;
    for (std::size_t i = 0; i < branch->inputs.size(); ++i) {
      Value* value = branch->inputs[i];
      const ValueInfo& info = inputs[i + 1];
      if (!value || !info.present) continue;
      value->dtype = info.dtype;
      value->shape = info.shape;
      value->rank_known = info.rank_known;
    }
    Status status = infer_graph(*branch);
    const bool taken = !cond_known || (std::string_view(name) == "then_branch") == taken_then;
    if (!status && taken) return status.with_context(str_cat(if_node.describe(), " ", name));
  }
  return Status::ok();
}

}  // namespace

Status infer_graph(Graph& graph) {
  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.topological_order());
  std::vector<ValueInfo> infos;
  std::vector<InferredOutput> outs;
  for (Node* node : order) {
    infos.clear();
    for (Value* in : node->inputs) {
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
    VOXRT_RETURN_IF_ERROR(infer_outputs(*node, infos, outs));
    for (std::size_t i = 0; i < node->outputs.size(); ++i) {
      Value* out = node->outputs[i];
      if (!out) continue;
      out->dtype = outs[i].dtype;
      out->shape = outs[i].shape;
      out->rank_known = outs[i].rank_known;
    }
    if (node->op == OpKind::kIf) VOXRT_RETURN_IF_ERROR(infer_branch_graphs(*node, infos));
  }
  return Status::ok();
}

Expected<SymShape> broadcast_shapes(const Node& node, const SymShape& a, const SymShape& b) {
  const std::size_t rank = std::max(a.size(), b.size());
  SymShape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const Dim* da = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const Dim* db = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!da) {
      out[i] = *db;
    } else if (!db) {
      out[i] = *da;
    } else if (da->is_known() && da->value == 1) {
      out[i] = *db;
    } else if (db->is_known() && db->value == 1) {
      out[i] = *da;
    } else if (da->is_known() && db->is_known()) {
      if (da->value != db->value) {
        return invalid_argument(node.describe(), ": cannot broadcast ", sym_shape_to_string(a),
                                " with ", sym_shape_to_string(b), " (dim ", i, ": ", da->value,
                                " vs ", db->value, ")");
      }
      out[i] = *da;
    } else {
      // One or both symbolic: keep the known one (a symbolic dim must then equal it or be 1).
      out[i] = da->is_known() ? *da : *db;
    }
  }
  return out;
}

Expected<std::int64_t> normalize_axis(const Node& node, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= std::max<std::int64_t>(rank, 1)) {
    return invalid_argument(node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + rank : axis;
}

}  // namespace voxrt::ir
