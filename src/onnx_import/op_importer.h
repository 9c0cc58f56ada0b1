// The table of per-op importers (STYLE.md 2): each ONNX op type maps to an IR op and a small
// function that applies the IR normalizations (attributes that became inputs in later opsets,
// Cast's dtype codes, ...). Families register explicitly, no static self-registration.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "onnx_import/graph_import.h"

namespace voxrt::onnx_import {

// One ONNX node being imported: inputs are resolved, outputs made, attributes converted.
struct NodeImport {
  const onnx::NodeProto& proto;
  ModelContext& model;
  Scope& scope;
  std::string name;
  int opset = 0;
  ir::OpKind op = ir::OpKind::kIdentity;
  // nullptr for an omitted optional input or output.
  std::vector<ir::Value*> inputs;
  std::vector<ir::Value*> outputs;
  ir::Attributes attrs;

  ir::Graph& graph() { return scope.graph(); }
  // "node 'n' (Op)", like ir::Node::describe, for errors.
  std::string describe() const;
  // A constant Value named after this node.
  ir::Value* add_constant(std::string_view role, Tensor tensor);
  // Puts `value` at input `index`, padding with omitted inputs.
  void set_input(std::size_t index, ir::Value* value);
  // Adds the IR node (op, inputs, outputs, attrs, opset) to the graph.
  ir::Node* emit();
};

// Returns ok when imported; kUnsupported lists the node as unsupported and import goes on; any
// other error stops the import.
using OpImportFn = Status (*)(NodeImport& node);

struct OpImporter {
  std::string_view onnx_name;
  ir::OpKind op;
  // Oldest ai.onnx opset whose form of the op this importer understands.
  int min_opset;
  OpImportFn import;
};

// The importer for an ai.onnx op type, or nullptr.
const OpImporter* find_op_importer(std::string_view onnx_op_type);
const std::vector<OpImporter>& all_op_importers();

// Families (src/onnx_import/ops/<family>.cpp).
void add_elementwise_importers(std::vector<OpImporter>& table);
void add_reduction_importers(std::vector<OpImporter>& table);
void add_data_movement_importers(std::vector<OpImporter>& table);
void add_pooling_importers(std::vector<OpImporter>& table);
void add_dense_importers(std::vector<OpImporter>& table);
void add_recurrent_importers(std::vector<OpImporter>& table);
void add_control_flow_importers(std::vector<OpImporter>& table);
void add_constant_importers(std::vector<OpImporter>& table);

// Helpers for importers.
// Emits the node unchanged.
Status import_as_is(NodeImport& node);
// Drops attributes that older opsets had and later ones removed without changing the math.
void drop_attributes(NodeImport& node, std::initializer_list<const char*> names);
// Moves INTS attribute `attr` to an i64 constant input at `index` (no-op when absent); error when
// the node also has that input.
Status ints_attribute_to_input(NodeImport& node, const std::string& attr, std::size_t index);
// Moves FLOAT attribute `attr` to an f32 scalar constant input at `index` (no-op when absent).
Status float_attribute_to_input(NodeImport& node, const std::string& attr, std::size_t index);
// The attribute's value when present with type T, an error naming the node when present with
// another type, nullptr when absent.
template <typename T>
Expected<const T*> typed_attribute(const NodeImport& node, const std::string& attr);

template <typename T>
Expected<const T*> typed_attribute(const NodeImport& node, const std::string& attr) {
  auto it = node.attrs.all().find(attr);
  if (it == node.attrs.all().end()) return static_cast<const T*>(nullptr);
  if (const T* value = std::get_if<T>(&it->second)) return value;
  return invalid_argument(node.describe(), ": attribute '", attr, "' has the wrong type");
}

}  // namespace voxrt::onnx_import
