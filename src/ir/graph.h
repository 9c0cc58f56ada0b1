// The IR: a graph of Nodes connected by Values. Nodes and Values are owned by their Graph and
// keep stable addresses until removed. Control-flow subgraphs (If) live in node attributes.
//
// If convention: inputs[0] is the condition; inputs[1..] are the outer values the branches read
// (made explicit by the importer). Both branch graphs ("then_branch", "else_branch") take exactly
// those values as their inputs, in that order, and produce the node's outputs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/attributes.h"
#include "ir/op_kind.h"
#include "ir/shape.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::ir {

struct Node;

struct Value {
  std::string name;
  DType dtype = DType::kF32;
  SymShape shape;
  // False while even the rank is unknown.
  bool rank_known = false;
  // Initializers, Constant nodes and folded results carry their contents here.
  std::optional<Tensor> constant;
  Node* producer = nullptr;

  bool is_constant() const { return constant.has_value(); }
};

struct Node {
  OpKind op = OpKind::kIdentity;
  std::string name;
  // nullptr marks an omitted optional input or output.
  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  Attributes attrs;
  // Names of the original (ONNX) nodes this node was made from, for inspect and errors.
  std::vector<std::string> origin;
  // Opset of the node's domain at import (some attribute defaults depend on it).
  int opset = 0;

  Value* input(std::size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Value* output(std::size_t i) const { return i < outputs.size() ? outputs[i] : nullptr; }
  // "node 'conv1' (Conv)", the prefix of every error about a node.
  std::string describe() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  Value* add_value(std::string name, DType dtype, SymShape shape, bool rank_known = true);
  Value* add_constant(std::string name, Tensor tensor);
  // Adds a node and sets each output's producer.
  Node* add_node(OpKind op, std::string name, std::vector<Value*> inputs,
                 std::vector<Value*> outputs);
  // Detaches and destroys the node; its output values stay (without producer) until pruned.
  void remove_node(Node* node);
  // Points every use of `from` (node inputs and graph outputs) at `to`.
  void replace_all_uses(Value* from, Value* to);
  // Deletes values that no node or graph input/output refers to.
  void prune_unused_values();

  std::vector<Node*> nodes() const;
  std::vector<Value*> values() const;
  // Nodes in an order where every producer precedes its consumers; error on a cycle.
  Expected<std::vector<Node*>> topological_order() const;
  // Nodes that read `value` (an O(nodes) scan: graphs here are small).
  std::vector<Node*> consumers(const Value* value) const;
  bool is_graph_output(const Value* value) const;
  Value* find_value(const std::string& name) const;
  // A name not used by any value or node yet, derived from `base`.
  std::string unique_name(const std::string& base);

  std::vector<Value*> inputs;
  std::vector<Value*> outputs;
  std::string name;
  // Model metadata (ONNX metadata_props plus what the builder adds).
  std::map<std::string, std::string> metadata;

  // Checks that every node input is produced, constant or a graph input, and the order is acyclic.
  Status validate() const;

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::uint64_t name_counter_ = 0;
};

}  // namespace voxrt::ir
