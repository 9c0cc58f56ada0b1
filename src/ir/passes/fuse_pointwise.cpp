#include "ir/passes/fuse_pointwise.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ir/pointwise_program.h"

namespace voxrt::ir {
namespace {

bool is_f32(const Value* v) {
  return v && v->dtype == DType::kF32;
}

// A scalar f32 constant: becomes a program constant instead of an input.
bool is_scalar_constant(const Value* v) {
  return v && v->constant && v->constant->dtype() == DType::kF32 &&
         v->constant->element_count() == 1;
}

// Inputs that carry data through the op (Clip's bounds are parameters).
std::size_t data_input_count(const Node& node) {
  return node.op == OpKind::kClip ? 1 : node.inputs.size();
}

bool is_fusable(const Node& node) {
  if (!is_pointwise_op(node.op) || node.outputs.size() != 1 || !is_f32(node.outputs[0])) {
    return false;
  }
  const std::size_t data_inputs = data_input_count(node);
  const int arity = pointwise_arity(static_cast<std::int64_t>(node.op));
  if (arity == 1 && data_inputs != 1) return false;
  if (arity == 2 && data_inputs < 2) return false;  // Max/Min may be variadic (>= 2)
  for (std::size_t i = 0; i < data_inputs; ++i) {
    if (!is_f32(node.inputs[i])) return false;
  }
  if (node.op == OpKind::kClip) {
    for (std::size_t i = 1; i < node.inputs.size(); ++i) {
      if (node.inputs[i] && !is_scalar_constant(node.inputs[i])) return false;
    }
  }
  return true;
}

class FusePointwisePass final : public Pass {
 public:
  std::string_view name() const override { return "fuse_pointwise"; }
  Status apply(Graph& graph, PassReport& report) override;

 private:
  Status fuse_group(Graph& graph, const std::vector<Node*>& group, PassReport& report);
};

Status FusePointwisePass::apply(Graph& graph, PassReport& report) {
  VOXRT_ASSIGN_OR_RETURN(std::vector<Node*> order, graph.topological_order());
  std::unordered_map<const Value*, std::vector<Node*>> consumers;
  for (Node* node : order) {
    for (Value* in : node->inputs) {
      if (in) consumers[in].push_back(node);
    }
  }
  std::unordered_map<const Node*, std::size_t> position;
  for (std::size_t i = 0; i < order.size(); ++i) position[order[i]] = i;

  std::unordered_set<const Node*> assigned;
  std::vector<std::vector<Node*>> groups;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* root = *it;
    if (assigned.count(root) || !is_fusable(*root)) continue;
    std::unordered_set<const Node*> members{root};
    std::vector<Node*> group{root};
    assigned.insert(root);
    for (std::size_t next = 0; next < group.size(); ++next) {
      const Node* node = group[next];
      for (std::size_t i = 0; i < data_input_count(*node); ++i) {
        Value* in = node->inputs[i];
        Node* producer = in->producer;
        if (in->constant || !producer || assigned.count(producer) || !is_fusable(*producer) ||
            graph.is_graph_output(in)) {
          continue;
        }
        const std::vector<Node*>& uses = consumers[in];
        const bool all_inside = std::all_of(uses.begin(), uses.end(),
                                            [&](const Node* n) { return members.count(n) != 0; });
        if (!all_inside) continue;
        members.insert(producer);
        group.push_back(producer);
        assigned.insert(producer);
      }
    }
    if (group.size() < 2) continue;
    std::sort(group.begin(), group.end(),
              [&](const Node* a, const Node* b) { return position[a] < position[b]; });
    groups.push_back(std::move(group));
  }
  for (const std::vector<Node*>& group : groups) {
    VOXRT_RETURN_IF_ERROR(fuse_group(graph, group, report));
  }
  if (!groups.empty()) graph.prune_unused_values();
  return Status::ok();
}

// `group` is in topological order; its last node produces the only value used outside.
Status FusePointwisePass::fuse_group(Graph& graph, const std::vector<Node*>& group,
                                     PassReport& report) {
  std::unordered_set<const Value*> produced_inside;
  for (const Node* node : group) produced_inside.insert(node->outputs[0]);

  PointwiseProgram program;
  std::vector<Value*> inputs;
  std::unordered_map<const Value*, std::int32_t> reg;
  for (const Node* node : group) {
    for (std::size_t i = 0; i < data_input_count(*node); ++i) {
      Value* in = node->inputs[i];
      if (produced_inside.count(in) || is_scalar_constant(in) || reg.count(in)) continue;
      reg[in] = static_cast<std::int32_t>(inputs.size());
      inputs.push_back(in);
    }
  }
  if (inputs.size() > kMaxPointwiseInputs) {
    return Status::ok();  // too wide to be worth a program; leave the group unfused
  }
  program.input_count = static_cast<std::int32_t>(inputs.size());

  auto emit = [&](std::int64_t opcode, std::int32_t a, std::int32_t b,
                  std::vector<float> params) -> std::int32_t {
    PointwiseInstruction ins{opcode, a, b, -1};
    if (!params.empty()) {
      ins.param = static_cast<std::int32_t>(program.constants.size());
      program.constants.insert(program.constants.end(), params.begin(), params.end());
    }
    program.code.push_back(ins);
    return program.output_register();
  };
  auto operand = [&](Value* v) -> std::int32_t {
    auto found = reg.find(v);
    if (found != reg.end()) return found->second;
    // A scalar constant, loaded once.
    const std::int32_t r = emit(kPointwiseConstantOpcode, -1, -1,
                                {static_cast<float>(v->constant->element_as_double(0))});
    reg[v] = r;
    return r;
  };
  auto bound = [](const Node* node, std::size_t i, float fallback) {
    const Value* v = node->input(i);
    return v ? static_cast<float>(v->constant->element_as_double(0)) : fallback;
  };

  std::string description;
  for (const Node* node : group) {
    const auto opcode = static_cast<std::int64_t>(node->op);
    std::int32_t result = -1;
    switch (node->op) {
      case OpKind::kLeakyRelu:
        result =
            emit(opcode, operand(node->inputs[0]), -1, {node->attrs.get_float("alpha", 0.01f)});
        break;
      case OpKind::kElu:
        result = emit(opcode, operand(node->inputs[0]), -1, {node->attrs.get_float("alpha", 1.0f)});
        break;
      case OpKind::kHardSigmoid:
        result = emit(opcode, operand(node->inputs[0]), -1,
                      {node->attrs.get_float("alpha", 0.2f), node->attrs.get_float("beta", 0.5f)});
        break;
      case OpKind::kClip:
        result = emit(opcode, operand(node->inputs[0]), -1,
                      {bound(node, 1, -std::numeric_limits<float>::infinity()),
                       bound(node, 2, std::numeric_limits<float>::infinity())});
        break;
      default:
        if (pointwise_arity(opcode) == 1) {
          result = emit(opcode, operand(node->inputs[0]), -1, {});
        } else {
          // Binary ops; variadic Max/Min fold left.
          result = operand(node->inputs[0]);
          for (std::size_t i = 1; i < node->inputs.size(); ++i) {
            const std::int32_t rhs = operand(node->inputs[i]);
            result = emit(opcode, result, rhs, {});
          }
        }
        break;
    }
    reg[node->outputs[0]] = result;
    description +=
        str_cat(description.empty() ? "" : " + ", op_name(node->op), " '", node->name, "'");
  }

  Node* root = group.back();
  Value* output = root->outputs[0];
  const std::string fused_name = graph.unique_name(root->name + "_fused");
  std::vector<std::string> origin;
  for (const Node* node : group) {
    if (node->origin.empty())
      origin.push_back(node->name);
    else
      origin.insert(origin.end(), node->origin.begin(), node->origin.end());
  }
  const int opset = root->opset;
  VOXRT_RETURN_IF_ERROR(validate_pointwise_program(program, root->describe()));
  Node* fused = graph.add_node(OpKind::kFusedPointwise, fused_name, inputs, {output});
  encode_pointwise_program(program, fused->attrs);
  fused->origin = std::move(origin);
  fused->opset = opset;
  for (Node* node : group) graph.remove_node(node);
  output->producer = fused;
  report.changes.push_back(str_cat("fused ", description, " into FusedPointwise '", fused_name,
                                   "' (", inputs.size(), " inputs, ", program.code.size(),
                                   " instructions)"));
  return Status::ok();
}

}  // namespace

std::unique_ptr<Pass> make_fuse_pointwise_pass() {
  return std::make_unique<FusePointwisePass>();
}

}  // namespace voxrt::ir
