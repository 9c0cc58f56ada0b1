// GraphProto -> ir::Graph, shared by the main graph and If branches. A Scope maps ONNX names to
// Values; a branch's scope captures what it reads from enclosing scopes, which become the
// branch's inputs (the If convention in ir/graph.h).
#pragma once

#include <onnx/onnx_pb.h>

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace voxrt::onnx_import {

// What every graph of one model shares while it is imported.
struct ModelContext {
  std::string external_data_dir;
  // Opset of the ai.onnx domain, and of every imported domain (for error messages).
  int onnx_opset = 0;
  std::map<std::string, int> domain_opsets;
  // One line per unsupported node (or input), all reported together at the end.
  std::vector<std::string> unsupported;
};

class Scope {
 public:
  // `where` says which graph this is in error messages ("" for the main graph).
  Scope(ir::Graph& graph, Scope* parent, std::string where)
      : graph_(graph), parent_(parent), where_(std::move(where)) {}

  ir::Graph& graph() { return graph_; }
  const std::string& where() const { return where_; }
  bool is_subgraph() const { return parent_ != nullptr; }

  ir::Value* find_local(const std::string& name) const;
  void define(const std::string& name, ir::Value* value) { values_[name] = value; }
  // The Value for `name` here, capturing it from enclosing scopes when this graph does not define
  // it (the capture becomes an input of this graph); nullptr when no scope knows it.
  ir::Value* resolve(const std::string& name);
  // The input of this graph that receives outer value `name`, made if it does not exist yet (an
  // If branch gets an input for every value its sibling branch captures too).
  ir::Value* capture_input(const std::string& name);
  // Captured outer names and their local inputs, in capture order.
  const std::vector<std::pair<std::string, ir::Value*>>& captures() const { return captures_; }

 private:
  ir::Graph& graph_;
  Scope* parent_;
  std::string where_;
  std::unordered_map<std::string, ir::Value*> values_;
  std::vector<std::pair<std::string, ir::Value*>> captures_;
};

// The main graph: inputs (without initializers), initializers, nodes, outputs.
Status import_main_graph(const onnx::GraphProto& proto, ModelContext& context, ir::Graph& graph);
// A subgraph (If branch) inside `scope.graph()`'s owner: initializers, nodes and outputs; graph
// inputs are left to the caller, which knows the captures of every sibling branch.
Status import_subgraph(const onnx::GraphProto& proto, ModelContext& context, Scope& scope);

// dtype and shape of a TypeProto (tensor types only).
Status apply_type(const onnx::TypeProto& type, std::string_view where, ir::Value& value);

}  // namespace voxrt::onnx_import
