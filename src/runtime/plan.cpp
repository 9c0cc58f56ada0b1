#include "runtime/plan.h"

#include <chrono>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "ir/shape_inference.h"
#include "ir/view_ops.h"
#include "runtime/engine_format.h"

namespace voxrt::runtime {
namespace {

Expected<std::unique_ptr<backends::Kernel>> make_kernel(const ir::Node& node, TacticPolicy policy,
                                                        std::string& tactic_name) {
  const auto tactics = backends::cpu::tactics_for(node);
  if (tactics.empty()) {
    return unsupported(
        node.describe(), ": the CPU backend cannot run this node (op ", ir::op_name(node.op),
        ", inputs of ",
        node.inputs.empty() || !node.inputs[0] ? "?" : dtype_name(node.inputs[0]->dtype), ")");
  }
  backends::TacticId tactic = tactics.front().id;
  tactic_name = tactics.front().name;
  if (policy == TacticPolicy::kRecorded && node.attrs.has(kTacticAttr)) {
    tactic = static_cast<backends::TacticId>(node.attrs.get_int(kTacticAttr, 0));
    bool known = false;
    for (const auto& t : tactics) {
      if (t.id == tactic) {
        known = true;
        tactic_name = t.name;
      }
    }
    if (!known) {
      return unsupported(node.describe(), ": the engine asks for tactic ", tactic, " (",
                         node.attrs.get_string(kTacticNameAttr, "?"),
                         ") which this runtime cannot use here");
    }
  } else if (policy != TacticPolicy::kReference && tactics.size() > 1) {
    tactic = tactics[1].id;
    tactic_name = tactics[1].name;
  }
  auto kernel = backends::cpu::create_kernel(node, tactic);
  if (!kernel) return kernel.status().with_context(str_cat("tactic '", tactic_name, "'"));
  return kernel;
}

}  // namespace

Expected<std::unique_ptr<Plan>> Plan::compile(const ir::Graph& graph, TacticPolicy policy) {
  auto plan = std::unique_ptr<Plan>(new Plan());
  plan->graph_ = &graph;
  std::unordered_map<const ir::Value*, int> slot_of;
  auto slot = [&](const ir::Value* v) {
    auto it = slot_of.find(v);
    if (it != slot_of.end()) return it->second;
    const int s = plan->slot_count_++;
    slot_of[v] = s;
    if (v->constant) plan->constants_.emplace_back(s, &*v->constant);
    return s;
  };
  for (const ir::Value* in : graph.inputs) plan->input_slots_.push_back(slot(in));
  VOXRT_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph.topological_order());
  std::vector<std::string> unsupported_nodes;
  for (const ir::Node* node : order) {
    Step step;
    step.node = node;
    for (const ir::Value* in : node->inputs) step.inputs.push_back(in ? slot(in) : -1);
    for (const ir::Value* out : node->outputs) step.outputs.push_back(out ? slot(out) : -1);
    if (node->op == ir::OpKind::kIf) {
      auto then_graph = node->attrs.get_graph("then_branch");
      auto else_graph = node->attrs.get_graph("else_branch");
      if (!then_graph || !else_graph)
        return invalid_argument(node->describe(), ": missing a branch graph");
      auto then_plan = compile(*then_graph, policy);
      if (!then_plan)
        return then_plan.status().with_context(str_cat(node->describe(), " then_branch"));
      auto else_plan = compile(*else_graph, policy);
      if (!else_plan)
        return else_plan.status().with_context(str_cat(node->describe(), " else_branch"));
      step.then_plan = std::move(*then_plan);
      step.else_plan = std::move(*else_plan);
      step.tactic_name = "control_flow";
    } else if (ir::is_view_op(*node)) {
      step.is_view = true;
      step.tactic_name = "view";
    } else {
      auto kernel = make_kernel(*node, policy, step.tactic_name);
      if (!kernel) {
        unsupported_nodes.push_back(kernel.status().message());
        continue;
      }
      step.kernel = std::move(*kernel);
    }
    plan->steps_.push_back(std::move(step));
  }
  if (!unsupported_nodes.empty()) {
    std::string all;
    for (const auto& m : unsupported_nodes) all += "\n  " + m;
    return unsupported(unsupported_nodes.size(), " node(s) cannot run on the CPU backend:", all);
  }
  for (const ir::Value* out : graph.outputs) plan->output_slots_.push_back(slot(out));
  // Free each intermediate after its last reader, so peak memory follows liveness.
  std::vector<int> last_reader(static_cast<std::size_t>(plan->slot_count_), -1);
  for (std::size_t i = 0; i < plan->steps_.size(); ++i) {
    for (int s : plan->steps_[i].inputs) {
      if (s >= 0) last_reader[static_cast<std::size_t>(s)] = static_cast<int>(i);
    }
  }
  std::vector<bool> keep(static_cast<std::size_t>(plan->slot_count_), false);
  for (int s : plan->output_slots_) keep[static_cast<std::size_t>(s)] = true;
  for (auto& [s, t] : plan->constants_) keep[static_cast<std::size_t>(s)] = true;
  for (std::size_t s = 0; s < last_reader.size(); ++s) {
    if (last_reader[s] >= 0 && !keep[s])
      plan->steps_[static_cast<std::size_t>(last_reader[s])].release_after.push_back(
          static_cast<int>(s));
  }
  return plan;
}

std::vector<std::pair<const ir::Node*, std::string>> Plan::tactics() const {
  std::vector<std::pair<const ir::Node*, std::string>> out;
  for (const Step& s : steps_) out.emplace_back(s.node, s.tactic_name);
  return out;
}

Status Plan::execute(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
                     backends::KernelContext& context, const StepObserver* observer) const {
  if (inputs.size() != input_slots_.size()) {
    return invalid_argument("graph '", graph_->name, "' takes ", input_slots_.size(),
                            " inputs, got ", inputs.size());
  }
  std::vector<Tensor> slots(static_cast<std::size_t>(slot_count_));
  for (auto& [s, t] : constants_) slots[static_cast<std::size_t>(s)] = *t;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* v = graph_->inputs[i];
    const Tensor& t = inputs[i];
    if (!t.is_valid()) return invalid_argument("input '", v->name, "' is missing");
    if (t.dtype() != v->dtype) {
      return invalid_argument("input '", v->name, "': expected dtype ", dtype_name(v->dtype),
                              ", got ", dtype_name(t.dtype()));
    }
    if (v->rank_known && t.rank() != v->shape.size()) {
      return invalid_argument("input '", v->name, "': expected rank ", v->shape.size(), " (",
                              ir::sym_shape_to_string(v->shape), "), got ",
                              dims_to_string(t.dims()));
    }
    for (std::size_t d = 0; v->rank_known && d < t.rank(); ++d) {
      if (v->shape[d].is_known() && v->shape[d].value != t.dim(d)) {
        return invalid_argument("input '", v->name, "': dim ", d, " must be ", v->shape[d].value,
                                " (", ir::sym_shape_to_string(v->shape), "), got ",
                                dims_to_string(t.dims()));
      }
    }
    slots[static_cast<std::size_t>(input_slots_[i])] = t;
  }
  for (const Step& step : steps_) {
    VOXRT_RETURN_IF_ERROR(run_step(step, slots, context, observer));
  }
  outputs.clear();
  for (int s : output_slots_) outputs.push_back(slots[static_cast<std::size_t>(s)]);
  return Status::ok();
}

Status Plan::run_step(const Step& step, std::vector<Tensor>& slots,
                      backends::KernelContext& context, const StepObserver* observer) const {
  const ir::Node& node = *step.node;
  const auto start = std::chrono::steady_clock::now();
  std::vector<const Tensor*> in_ptrs(step.inputs.size(), nullptr);
  for (std::size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] >= 0) in_ptrs[i] = &slots[static_cast<std::size_t>(step.inputs[i])];
  }
  std::vector<Tensor*> out_ptrs(step.outputs.size(), nullptr);

  if (node.op == ir::OpKind::kIf) {
    const Tensor* cond = in_ptrs.empty() ? nullptr : in_ptrs[0];
    if (!cond || !cond->is_valid() || cond->element_count() != 1) {
      return invalid_argument(node.describe(), ": the condition must be a single-element tensor");
    }
    const Plan& branch = cond->element_as_i64(0) ? *step.then_plan : *step.else_plan;
    std::vector<Tensor> branch_inputs;
    for (std::size_t i = 1; i < in_ptrs.size(); ++i)
      branch_inputs.push_back(in_ptrs[i] ? *in_ptrs[i] : Tensor());
    std::vector<Tensor> branch_outputs;
    VOXRT_RETURN_IF_ERROR(branch.execute(branch_inputs, branch_outputs, context, observer)
                              .with_context(node.describe()));
    if (branch_outputs.size() != step.outputs.size()) {
      return invalid_argument(node.describe(), ": the branch produced ", branch_outputs.size(),
                              " outputs, the node has ", step.outputs.size());
    }
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0)
        slots[static_cast<std::size_t>(step.outputs[i])] = std::move(branch_outputs[i]);
    }
  } else {
    std::vector<ir::ValueInfo> infos(step.inputs.size());
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      if (!in_ptrs[i] || !in_ptrs[i]->is_valid()) {
        infos[i].present = false;
        in_ptrs[i] = nullptr;
        continue;
      }
      infos[i].dtype = in_ptrs[i]->dtype();
      infos[i].shape = ir::sym_shape_from_dims(in_ptrs[i]->dims());
      infos[i].data = in_ptrs[i];
    }
    std::vector<ir::InferredOutput> inferred;
    VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, inferred));
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      auto dims = ir::known_dims(inferred[i].shape);
      if (!dims) {
        return internal_error(node.describe(), ": output ", i, " has unknown dims ",
                              ir::sym_shape_to_string(inferred[i].shape), " at run time");
      }
      Tensor& out = slots[static_cast<std::size_t>(step.outputs[i])];
      if (step.is_view && i == 0) {
        VOXRT_ASSIGN_OR_RETURN(out, in_ptrs[0]->reshaped(*dims));
      } else {
        out = Tensor::uninitialized(inferred[i].dtype, std::move(*dims));
      }
      out_ptrs[i] = &out;
    }
    if (!step.is_view) {
      VOXRT_RETURN_IF_ERROR(step.kernel->run(in_ptrs, out_ptrs, context));
    }
  }
  if (observer) {
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0) out_ptrs[i] = &slots[static_cast<std::size_t>(step.outputs[i])];
    }
    const double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::vector<const Tensor*> outs(out_ptrs.begin(), out_ptrs.end());
    (*observer)(node, in_ptrs, outs, elapsed_us);
  }
  for (int s : step.release_after) slots[static_cast<std::size_t>(s)] = Tensor();
  return Status::ok();
}

}  // namespace voxrt::runtime
