// If: outputs take their dtypes from the branches and the dims both branches agree on (unknown
// where they differ). With a known condition (always at run time) only the taken branch counts.
// Branch graphs are shared by every engine and thread, so they are inferred into a local table
// and never written to.
#include <unordered_map>

#include "ir/shape_inference.h"

namespace voxrt::ir {

namespace {

struct KnownValue {
  DType dtype = DType::kF32;
  SymShape shape;
  bool rank_known = false;
  std::optional<Tensor> data;
};

Status infer_branch(const Node& if_node, const char* branch_name,
                    std::span<const ValueInfo> captured, std::vector<KnownValue>& results) {
  std::shared_ptr<Graph> branch = if_node.attrs.get_graph(branch_name);
  if (!branch) {
    return invalid_argument(if_node.describe(), ": graph attribute '", branch_name, "' is missing");
  }
  if (branch->inputs.size() != captured.size()) {
    return invalid_argument(if_node.describe(), ": ", branch_name, " takes ", branch->inputs.size(),
                            " inputs, the node passes ", captured.size(), " captured values");
  }
  std::unordered_map<const Value*, KnownValue> known;
  for (std::size_t i = 0; i < captured.size(); ++i) {
    const ValueInfo& info = captured[i];
    KnownValue& value = known[branch->inputs[i]];
    value.dtype = info.dtype;
    value.shape = info.shape;
    value.rank_known = info.rank_known;
    if (info.data) value.data = *info.data;
  }
  auto lookup = [&known](const Value* value) -> KnownValue {
    if (auto it = known.find(value); it != known.end()) return it->second;
    return KnownValue{value->dtype, value->shape, value->rank_known, value->constant};
  };

  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, branch->topological_order());
  std::vector<KnownValue> node_inputs;
  std::vector<ValueInfo> infos;
  std::vector<InferredOutput> outs;
  for (const Node* node : order) {
    node_inputs.clear();
    infos.clear();
    for (const Value* in : node->inputs) node_inputs.push_back(in ? lookup(in) : KnownValue{});
    for (std::size_t i = 0; i < node->inputs.size(); ++i) {
      ValueInfo info;
      info.present = node->inputs[i] != nullptr;
      info.dtype = node_inputs[i].dtype;
      info.shape = node_inputs[i].shape;
      info.rank_known = node_inputs[i].rank_known;
      info.data = node_inputs[i].data ? &*node_inputs[i].data : nullptr;
      infos.push_back(std::move(info));
    }
    Status status = infer_outputs(*node, infos, outs);
    if (!status) return status.with_context(str_cat(if_node.describe(), " ", branch_name));
    for (std::size_t i = 0; i < node->outputs.size() && i < outs.size(); ++i) {
      if (!node->outputs[i]) continue;
      known[node->outputs[i]] = KnownValue{outs[i].dtype, std::move(outs[i].shape),
                                           outs[i].rank_known, std::move(outs[i].data)};
    }
  }
  results.clear();
  for (const Value* out : branch->outputs) results.push_back(lookup(out));
  return Status::ok();
}

Status infer_if(const Node& node, std::span<const ValueInfo> inputs,
                std::vector<InferredOutput>& outputs) {
  if (inputs.empty() || !inputs[0].present) {
    return invalid_argument(node.describe(), ": expected input 0 (cond)");
  }
  const ValueInfo& cond = inputs[0];
  if (cond.dtype != DType::kBool) {
    return invalid_argument(node.describe(), ": cond is ", dtype_name(cond.dtype),
                            ", expected bool");
  }
  const std::span<const ValueInfo> captured = inputs.subspan(1);
  std::vector<KnownValue> then_results;
  std::vector<KnownValue> else_results;
  if (cond.data) {
    if (cond.data->element_count() != 1) {
      return invalid_argument(node.describe(), ": cond has ", cond.data->element_count(),
                              " elements, expected 1");
    }
    const bool taken_then = cond.data->element_as_i64(0) != 0;
    VOXRT_RETURN_IF_ERROR(
        infer_branch(node, taken_then ? "then_branch" : "else_branch", captured, then_results));
    if (then_results.size() != outputs.size()) {
      return invalid_argument(node.describe(), ": the taken branch has ", then_results.size(),
                              " outputs, the node has ", outputs.size());
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      outputs[i] = InferredOutput{then_results[i].dtype, std::move(then_results[i].shape),
                                  then_results[i].rank_known, std::move(then_results[i].data)};
    }
    return Status::ok();
  }
  VOXRT_RETURN_IF_ERROR(infer_branch(node, "then_branch", captured, then_results));
  VOXRT_RETURN_IF_ERROR(infer_branch(node, "else_branch", captured, else_results));
  if (then_results.size() != outputs.size() || else_results.size() != outputs.size()) {
    return invalid_argument(node.describe(), ": branches have ", then_results.size(), " and ",
                            else_results.size(), " outputs, the node has ", outputs.size());
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const KnownValue& a = then_results[i];
    const KnownValue& b = else_results[i];
    if (a.dtype != b.dtype) {
      return invalid_argument(node.describe(), ": output ", i, " is ", dtype_name(a.dtype),
                              " in then_branch but ", dtype_name(b.dtype), " in else_branch");
    }
    InferredOutput& out = outputs[i];
    out.dtype = a.dtype;
    out.rank_known = a.rank_known && b.rank_known && a.shape.size() == b.shape.size();
    out.shape.clear();
    if (out.rank_known) {
      for (std::size_t d = 0; d < a.shape.size(); ++d) {
        out.shape.push_back(a.shape[d] == b.shape[d] ? a.shape[d] : Dim{});
      }
    }
  }
  return Status::ok();
}

}  // namespace

Status infer_control_flow(const Node& node, std::span<const ValueInfo> inputs,
                          std::vector<InferredOutput>& outputs) {
  if (node.op == OpKind::kIf) return infer_if(node, inputs, outputs);
  return unsupported(node.describe(), ": no shape inference for this control-flow op");
}

}  // namespace voxrt::ir
