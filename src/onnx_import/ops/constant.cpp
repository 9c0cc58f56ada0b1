// Constant nodes never reach the IR as nodes: their output becomes a constant Value.
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

namespace {

Status import_constant(NodeImport& node) {
  if (node.outputs.size() != 1 || !node.outputs[0]) {
    return invalid_argument(node.describe(), ": expected 1 output, found ", node.outputs.size());
  }
  if (!node.inputs.empty()) {
    return invalid_argument(node.describe(), ": expected no inputs, found ", node.inputs.size());
  }
  for (const auto& attribute : node.proto.attribute()) {
    if (attribute.name() == "sparse_value") {
      return unsupported("sparse_value constants are not supported");
    }
    if (attribute.name() == "value_string" || attribute.name() == "value_strings") {
      return unsupported("string constants are not supported");
    }
  }
  std::optional<Tensor> tensor;
  int given = 0;
  for (const auto& [name, value] : node.attrs.all()) {
    ++given;
    if (name == "value") {
      if (const Tensor* t = std::get_if<Tensor>(&value)) tensor = *t;
    } else if (name == "value_float") {
      if (const float* f = std::get_if<float>(&value)) tensor = Tensor::scalar_f32(*f);
    } else if (name == "value_floats") {
      if (const auto* fs = std::get_if<std::vector<float>>(&value)) {
        tensor = Tensor::from_vector({static_cast<std::int64_t>(fs->size())}, *fs);
      }
    } else if (name == "value_int") {
      if (const auto* i = std::get_if<std::int64_t>(&value)) tensor = Tensor::scalar_i64(*i);
    } else if (name == "value_ints") {
      if (const auto* is = std::get_if<std::vector<std::int64_t>>(&value)) {
        tensor = Tensor::from_vector({static_cast<std::int64_t>(is->size())}, *is);
      }
    } else {
      return invalid_argument(node.describe(), ": unknown attribute '", name, "'");
    }
    if (!tensor) {
      return invalid_argument(node.describe(), ": attribute '", name, "' has the wrong type");
    }
  }
  if (given != 1 || !tensor) {
    return invalid_argument(node.describe(), ": expected exactly one value attribute, found ",
                            given);
  }
  ir::Value* out = node.outputs[0];
  out->dtype = tensor->dtype();
  out->shape = ir::sym_shape_from_dims(tensor->dims());
  out->rank_known = true;
  out->constant = std::move(tensor);
  return Status::ok();
}

}  // namespace

void add_constant_importers(std::vector<OpImporter>& table) {
  table.push_back({"Constant", ir::OpKind::kIdentity, 1, import_constant});
}

}  // namespace voxrt::onnx_import
