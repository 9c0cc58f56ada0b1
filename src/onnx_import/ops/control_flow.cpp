// If: both branches become ir::Graphs, and every outer value a branch reads becomes explicit:
// the node's inputs are [cond, captured...] and each branch takes the captured values as its
// inputs, in the same order (ir/graph.h).
#include "onnx_import/attribute_conversion.h"
#include "onnx_import/op_importer.h"

namespace voxrt::onnx_import {

namespace {

const onnx::GraphProto* find_graph_attribute(const onnx::NodeProto& node, const std::string& name) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    if (attribute.name() == name && attribute_type(attribute) == onnx::AttributeProto::GRAPH) {
      return &attribute.g();
    }
  }
  return nullptr;
}

Status import_if(NodeImport& node) {
  if (node.inputs.size() != 1 || !node.inputs[0]) {
    return invalid_argument(node.describe(), ": expected 1 input (cond), found ",
                            node.inputs.size());
  }
  const char* branch_names[] = {"then_branch", "else_branch"};
  std::shared_ptr<ir::Graph> branches[2];
  std::vector<std::unique_ptr<Scope>> scopes;
  for (int b = 0; b < 2; ++b) {
    const onnx::GraphProto* proto = find_graph_attribute(node.proto, branch_names[b]);
    if (!proto) {
      return invalid_argument(node.describe(), ": graph attribute '", branch_names[b],
                              "' is missing");
    }
    branches[b] = std::make_shared<ir::Graph>();
    const std::string outer = node.scope.where();
    scopes.push_back(std::make_unique<Scope>(*branches[b], &node.scope,
                                             str_cat(branch_names[b], " of node '", node.name, "'",
                                                     outer.empty() ? "" : " in ", outer)));
    VOXRT_RETURN_IF_ERROR(import_subgraph(*proto, node.model, *scopes.back()));
    if (static_cast<int>(branches[b]->outputs.size()) != node.proto.output_size()) {
      return invalid_argument(node.describe(), ": ", branch_names[b], " has ",
                              branches[b]->outputs.size(), " outputs, the node has ",
                              node.proto.output_size());
    }
  }
  // The union of both branches' captures, then-branch order first.
  std::vector<std::string> captured;
  for (const auto& scope : scopes) {
    for (const auto& [name, value] : scope->captures()) {
      if (std::find(captured.begin(), captured.end(), name) == captured.end())
        captured.push_back(name);
    }
  }
  for (int b = 0; b < 2; ++b) {
    branches[b]->inputs.clear();
    for (const std::string& name : captured) {
      branches[b]->inputs.push_back(scopes[static_cast<std::size_t>(b)]->capture_input(name));
    }
  }
  for (const std::string& name : captured) {
    ir::Value* outer = node.scope.resolve(name);
    if (!outer) return internal_error(node.describe(), ": captured '", name, "' vanished");
    node.inputs.push_back(outer);
  }
  node.attrs.set("then_branch", branches[0]);
  node.attrs.set("else_branch", branches[1]);
  return import_as_is(node);
}

}  // namespace

void add_control_flow_importers(std::vector<OpImporter>& table) {
  table.push_back({"If", ir::OpKind::kIf, 1, import_if});
}

}  // namespace voxrt::onnx_import
