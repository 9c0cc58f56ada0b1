#include "ir/graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace voxrt::ir {

std::string Node::describe() const {
  return str_cat("node '", name, "' (", op_name(op), ")");
}

Value* Graph::add_value(std::string value_name, DType dtype, SymShape shape, bool rank_known) {
  auto value = std::make_unique<Value>();
  value->name = std::move(value_name);
  value->dtype = dtype;
  value->shape = std::move(shape);
  value->rank_known = rank_known;
  values_.push_back(std::move(value));
  return values_.back().get();
}

Value* Graph::add_constant(std::string value_name, Tensor tensor) {
  Value* v = add_value(std::move(value_name), tensor.dtype(), sym_shape_from_dims(tensor.dims()));
  v->constant = std::move(tensor);
  return v;
}

Node* Graph::add_node(OpKind op, std::string node_name, std::vector<Value*> node_inputs,
                      std::vector<Value*> node_outputs) {
  auto node = std::make_unique<Node>();
  node->op = op;
  node->name = std::move(node_name);
  node->inputs = std::move(node_inputs);
  node->outputs = std::move(node_outputs);
  for (Value* out : node->outputs) {
    if (out) out->producer = node.get();
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().get();
}

void Graph::remove_node(Node* node) {
  for (Value* out : node->outputs) {
    if (out && out->producer == node) out->producer = nullptr;
  }
  std::erase_if(nodes_, [node](const std::unique_ptr<Node>& n) { return n.get() == node; });
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& node : nodes_) {
    for (Value*& in : node->inputs) {
      if (in == from) in = to;
    }
  }
  for (Value*& out : outputs) {
    if (out == from) out = to;
  }
}

void Graph::prune_unused_values() {
  std::unordered_set<const Value*> used(inputs.begin(), inputs.end());
  used.insert(outputs.begin(), outputs.end());
  for (auto& node : nodes_) {
    used.insert(node->inputs.begin(), node->inputs.end());
    used.insert(node->outputs.begin(), node->outputs.end());
  }
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) { return !used.count(v.get()); });
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (auto& n : nodes_) out.push_back(n.get());
  return out;
}

std::vector<Value*> Graph::values() const {
  std::vector<Value*> out;
  out.reserve(values_.size());
  for (auto& v : values_) out.push_back(v.get());
  return out;
}

Expected<std::vector<Node*>> Graph::topological_order() const {
  // Kahn's algorithm, keeping insertion order among ready nodes so plans are deterministic.
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const Value*, std::vector<Node*>> readers;
  for (auto& n : nodes_) {
    int count = 0;
    for (Value* in : n->inputs) {
      if (in && in->producer) {
        ++count;
        readers[in].push_back(n.get());
      }
    }
    pending[n.get()] = count;
  }
  std::vector<Node*> order;
  std::vector<Node*> ready;
  for (auto& n : nodes_) {
    if (pending[n.get()] == 0) ready.push_back(n.get());
  }
  std::size_t next = 0;
  while (next < ready.size()) {
    Node* n = ready[next++];
    order.push_back(n);
    for (Value* out : n->outputs) {
      if (!out) continue;
      auto it = readers.find(out);
      if (it == readers.end()) continue;
      for (Node* reader : it->second) {
        if (--pending[reader] == 0) ready.push_back(reader);
      }
    }
  }
  if (order.size() != nodes_.size()) {
    return invalid_argument("graph '", name, "' has a cycle: ", nodes_.size() - order.size(),
                            " nodes could not be ordered");
  }
  return order;
}

std::vector<Node*> Graph::consumers(const Value* value) const {
  std::vector<Node*> out;
  for (auto& n : nodes_) {
    if (std::find(n->inputs.begin(), n->inputs.end(), value) != n->inputs.end())
      out.push_back(n.get());
  }
  return out;
}

bool Graph::is_graph_output(const Value* value) const {
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

Value* Graph::find_value(const std::string& value_name) const {
  for (auto& v : values_) {
    if (v->name == value_name) return v.get();
  }
  return nullptr;
}

std::string Graph::unique_name(const std::string& base) {
  std::set<std::string> taken;
  for (auto& v : values_) taken.insert(v->name);
  for (auto& n : nodes_) taken.insert(n->name);
  if (!taken.count(base)) return base;
  for (;;) {
    std::string candidate = str_cat(base, "_", ++name_counter_);
    if (!taken.count(candidate)) return candidate;
  }
}

Status Graph::validate() const {
  std::unordered_set<const Value*> available(inputs.begin(), inputs.end());
  for (auto& v : values_) {
    if (v->is_constant()) available.insert(v.get());
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, topological_order());
  for (Node* n : order) {
    for (std::size_t i = 0; i < n->inputs.size(); ++i) {
      Value* in = n->inputs[i];
      if (in && !available.count(in) && !in->producer) {
        return invalid_argument(n->describe(), ": input ", i, " '", in->name,
                                "' is neither produced by a node, a constant nor a graph input");
      }
    }
    for (Value* out : n->outputs) {
      if (out) available.insert(out);
    }
  }
  for (Value* out : outputs) {
    if (!available.count(out)) {
      return invalid_argument("graph output '", out->name, "' is never produced");
    }
  }
  return Status::ok();
}

}  // namespace voxrt::ir
