#include "onnx_import/op_importer.h"

#include <algorithm>

namespace voxrt::onnx_import {

std::string NodeImport::describe() const {
  return str_cat("node '", name, "' (", proto.op_type(), ")");
}

ir::Value* NodeImport::add_constant(std::string_view role, Tensor tensor) {
  return graph().add_constant(graph().unique_name(str_cat(name, ".", role)), std::move(tensor));
}

void NodeImport::set_input(std::size_t index, ir::Value* value) {
  if (inputs.size() <= index) inputs.resize(index + 1, nullptr);
  inputs[index] = value;
}

ir::Node* NodeImport::emit() {
  // Trailing omitted inputs/outputs carry no information; drop them for one canonical form.
  while (!inputs.empty() && !inputs.back()) inputs.pop_back();
  while (!outputs.empty() && !outputs.back()) outputs.pop_back();
  ir::Node* node = graph().add_node(op, name, inputs, outputs);
  node->attrs = std::move(attrs);
  node->origin = {name};
  node->opset = opset;
  return node;
}

Status import_as_is(NodeImport& node) {
  node.emit();
  return Status::ok();
}

void drop_attributes(NodeImport& node, std::initializer_list<const char*> names) {
  for (const char* name : names) node.attrs.erase(name);
}

Status ints_attribute_to_input(NodeImport& node, const std::string& attr, std::size_t index) {
  VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t>* values,
                         typed_attribute<std::vector<std::int64_t>>(node, attr));
  if (!values) return Status::ok();
  if (node.inputs.size() > index && node.inputs[index]) {
    return invalid_argument(node.describe(), ": has both attribute '", attr, "' and input ", index);
  }
  const Dims dims{static_cast<std::int64_t>(values->size())};
  ir::Value* constant = node.add_constant(attr, Tensor::from_vector(dims, *values));
  node.attrs.erase(attr);
  node.set_input(index, constant);
  return Status::ok();
}

Status float_attribute_to_input(NodeImport& node, const std::string& attr, std::size_t index) {
  VOXRT_ASSIGN_OR_RETURN(const float* value, typed_attribute<float>(node, attr));
  if (!value) return Status::ok();
  if (node.inputs.size() > index && node.inputs[index]) {
    return invalid_argument(node.describe(), ": has both attribute '", attr, "' and input ", index);
  }
  ir::Value* constant = node.add_constant(attr, Tensor::scalar_f32(*value));
  node.attrs.erase(attr);
  node.set_input(index, constant);
  return Status::ok();
}

const std::vector<OpImporter>& all_op_importers() {
  static const std::vector<OpImporter> table = [] {
    std::vector<OpImporter> t;
    add_elementwise_importers(t);
    add_reduction_importers(t);
    add_data_movement_importers(t);
    add_pooling_importers(t);
    add_dense_importers(t);
    add_recurrent_importers(t);
    add_control_flow_importers(t);
    add_constant_importers(t);
    std::sort(t.begin(), t.end(),
              [](const OpImporter& a, const OpImporter& b) { return a.onnx_name < b.onnx_name; });
    return t;
  }();
  return table;
}

const OpImporter* find_op_importer(std::string_view onnx_op_type) {
  const auto& table = all_op_importers();
  auto it = std::lower_bound(
      table.begin(), table.end(), onnx_op_type,
      [](const OpImporter& entry, std::string_view name) { return entry.onnx_name < name; });
  return it != table.end() && it->onnx_name == onnx_op_type ? &*it : nullptr;
}

}  // namespace voxrt::onnx_import
