// Reductions, softmax family and normalizations.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

namespace {

using ir::OpKind;

// The IR uses the opset-18 form: axes as optional input 1. ReduceSum moved there at opset 13,
// the other reductions at opset 18.
Status import_reduce(NodeImport& node) {
  const bool axes_are_input =
      node.opset >= 18 || (node.op == OpKind::kReduceSum && node.opset >= 13);
  if (!axes_are_input) VOXRT_RETURN_IF_ERROR(ints_attribute_to_input(node, "axes", 1));
  return import_as_is(node);
}

// Inference only: training mode and the running-statistics outputs are refused.
Status import_batch_norm(NodeImport& node) {
  if (node.attrs.get_int("training_mode", 0) != 0) {
    return unsupported("training_mode=1 is not supported (inference only)");
  }
  if (node.opset < 9 && node.attrs.get_int("spatial", 1) == 0) {
    return unsupported("spatial=0 (per-element statistics, opset < 9) is not supported");
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    if (node.outputs[i]) {
      return unsupported("output ", i, " (running or saved statistics) exists only in training");
    }
  }
  drop_attributes(node, {"spatial", "is_test", "consumed_inputs", "training_mode"});
  return import_as_is(node);
}

// TopK before opset 10 took k as an attribute.
Status import_top_k(NodeImport& node) {
  if (node.opset < 10) {
    VOXRT_ASSIGN_OR_RETURN(const std::int64_t* k, typed_attribute<std::int64_t>(node, "k"));
    if (!k)
      return invalid_argument(node.describe(), ": opset ", node.opset, " TopK needs attribute 'k'");
    node.set_input(1, node.add_constant("k", Tensor::from_vector<std::int64_t>({1}, {*k})));
    node.attrs.erase("k");
  }
  return import_as_is(node);
}

}  // namespace

void add_reduction_importers(std::vector<OpImporter>& table) {
  const std::pair<std::string_view, OpKind> reduce_ops[] = {
      {"ReduceMean", OpKind::kReduceMean},
      {"ReduceSum", OpKind::kReduceSum},
      {"ReduceMax", OpKind::kReduceMax},
      {"ReduceMin", OpKind::kReduceMin},
      {"ReduceProd", OpKind::kReduceProd},
      {"ReduceL2", OpKind::kReduceL2},
      {"ReduceSumSquare", OpKind::kReduceSumSquare},
      {"ReduceLogSumExp", OpKind::kReduceLogSumExp},
  };
  for (const auto& [name, op] : reduce_ops) table.push_back({name, op, 1, import_reduce});
  table.push_back({"ArgMax", OpKind::kArgMax, 1, import_as_is});
  // Softmax family: node.opset tells the old 2-D coercion (< 13) from the single-axis form.
  table.push_back({"Softmax", OpKind::kSoftmax, 1, import_as_is});
  table.push_back({"LogSoftmax", OpKind::kLogSoftmax, 1, import_as_is});
  table.push_back({"LayerNormalization", OpKind::kLayerNormalization, 17, import_as_is});
  table.push_back({"BatchNormalization", OpKind::kBatchNormalization, 1, import_batch_norm});
  table.push_back({"InstanceNormalization", OpKind::kInstanceNormalization, 6, import_as_is});
  table.push_back({"CumSum", OpKind::kCumSum, 11, import_as_is});
  table.push_back({"TopK", OpKind::kTopK, 1, import_top_k});
}

}  // namespace voxrt::onnx_import
