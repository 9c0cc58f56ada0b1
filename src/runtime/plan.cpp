#include "runtime/plan.h"

#include <algorithm>
#include <chrono>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "ir/shape_inference.h"
#include "ir/view_ops.h"
#include "runtime/engine_format.h"

namespace voxrt::runtime {
namespace {

Expected<std::unique_ptr<backends::Kernel>> make_kernel(const ir::Node& node, TacticPolicy policy,
                                                        int profile, std::string& tactic_name) {
  const auto tactics = backends::cpu::tactics_for(node);
  if (tactics.empty()) {
    return unsupported(
        node.describe(), ": the CPU backend cannot run this node (op ", ir::op_name(node.op),
        ", inputs of ",
        node.inputs.empty() || !node.inputs[0] ? "?" : dtype_name(node.inputs[0]->dtype), ")");
  }
  backends::TacticId tactic = tactics.front().id;
  tactic_name = tactics.front().name;
  if (policy == TacticPolicy::kRecorded && recorded_tactic(node, profile) >= 0) {
    tactic = static_cast<backends::TacticId>(recorded_tactic(node, profile));
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
    if (policy == TacticPolicy::kFirstFastPrepacked) {
      for (const auto& t : tactics) {
        if (t.prepacks_constant_weights) {
          tactic = t.id;
          tactic_name = t.name;
          break;
        }
      }
    }
  }
  auto kernel = backends::cpu::create_kernel(node, tactic);
  if (!kernel) return kernel.status().with_context(str_cat("tactic '", tactic_name, "'"));
  return kernel;
}

}  // namespace

Expected<std::unique_ptr<Plan>> Plan::compile(const ir::Graph& graph, TacticPolicy policy,
                                              int profile) {
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
      auto then_plan = compile(*then_graph, policy, profile);
      if (!then_plan)
        return then_plan.status().with_context(str_cat(node->describe(), " then_branch"));
      auto else_plan = compile(*else_graph, policy, profile);
      if (!else_plan)
        return else_plan.status().with_context(str_cat(node->describe(), " else_branch"));
      step.then_plan = std::move(*then_plan);
      step.else_plan = std::move(*else_plan);
      step.tactic_name = "control_flow";
    } else if (ir::is_view_op(*node)) {
      step.is_view = true;
      step.tactic_name = "view";
    } else {
      auto kernel = make_kernel(*node, policy, profile, step.tactic_name);
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
  plan->slot_is_constant_.assign(static_cast<std::size_t>(plan->slot_count_), false);
  for (auto& [s, t] : plan->constants_) plan->slot_is_constant_[static_cast<std::size_t>(s)] = true;
  plan->producers_.assign(static_cast<std::size_t>(plan->slot_count_), SlotProducer{});
  for (std::size_t i = 0; i < plan->steps_.size(); ++i) {
    Step& step = plan->steps_[i];
    const ir::Node& node = *step.node;
    step.may_memoize_shapes = node.op != ir::OpKind::kIf;
    for (std::size_t k = 0; k < step.inputs.size(); ++k) {
      const bool constant =
          step.inputs[k] >= 0 && plan->slot_is_constant_[static_cast<std::size_t>(step.inputs[k])];
      step.input_is_constant.push_back(constant);
      if (step.inputs[k] >= 0 && !constant && !is_floating(node.inputs[k]->dtype))
        step.may_memoize_shapes = false;
    }
    if (step.is_view) {
      // A view's bytes are its input's: once the view is the last holder, they go back to the
      // step that made them.
      if (!step.outputs.empty() && step.outputs[0] >= 0 && step.inputs[0] >= 0)
        plan->producers_[static_cast<std::size_t>(step.outputs[0])] =
            plan->producers_[static_cast<std::size_t>(step.inputs[0])];
      continue;
    }
    if (step.kernel == nullptr) continue;
    for (std::size_t k = 0; k < step.outputs.size(); ++k) {
      if (step.outputs[k] >= 0)
        plan->producers_[static_cast<std::size_t>(step.outputs[k])] = {static_cast<int>(i),
                                                                       static_cast<int>(k)};
    }
  }
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

void Plan::prepare_workspace(PlanWorkspace& workspace) const {
  if (workspace.bound_plan == this) return;
  workspace.bound_plan = this;
  workspace.slots.assign(static_cast<std::size_t>(slot_count_), Tensor());
  for (auto& [s, t] : constants_) workspace.slots[static_cast<std::size_t>(s)] = *t;
  workspace.steps.clear();
  workspace.steps.resize(steps_.size());
}

void Plan::release_slot(int slot, PlanWorkspace& workspace) const {
  Tensor& tensor = workspace.slots[static_cast<std::size_t>(slot)];
  const SlotProducer& producer = producers_[static_cast<std::size_t>(slot)];
  if (producer.step >= 0 && tensor.holds_bytes_alone() &&
      tensor.size_bytes() <= kMaxReusedOutputBytes) {
    StepMemo& memo = workspace.steps[static_cast<std::size_t>(producer.step)];
    memo.spare_outputs[static_cast<std::size_t>(producer.output)] = std::move(tensor);
  }
  tensor = Tensor();
}

Status Plan::execute(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
                     backends::KernelContext& context, const StepObserver* observer,
                     PlanWorkspace* workspace) const {
  if (inputs.size() != input_slots_.size()) {
    return invalid_argument("graph '", graph_->name, "' takes ", input_slots_.size(),
                            " inputs, got ", inputs.size());
  }
  PlanWorkspace call_workspace;
  PlanWorkspace& ws = workspace ? *workspace : call_workspace;
  prepare_workspace(ws);
  std::vector<Tensor>& slots = ws.slots;
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
  }
  for (std::size_t i = 0; i < inputs.size(); ++i)
    slots[static_cast<std::size_t>(input_slots_[i])] = inputs[i];
  Status status = Status::ok();
  for (std::size_t i = 0; i < steps_.size() && status.is_ok(); ++i) {
    status = run_step(i, ws, context, observer);
  }
  outputs.clear();
  if (status.is_ok()) {
    for (int s : output_slots_) {
      Tensor& t = slots[static_cast<std::size_t>(s)];
      // A slot may feed two graph outputs, or be a constant that must stay for the next run.
      const bool keep = slot_is_constant_[static_cast<std::size_t>(s)] ||
                        std::count(output_slots_.begin(), output_slots_.end(), s) > 1;
      if (keep) {
        outputs.push_back(t);
      } else {
        outputs.push_back(std::move(t));
      }
    }
  }
  // Nothing of this call stays referenced by the workspace but the constants and the spare
  // buffers (dead outputs, and everything after a failed step, are released here).
  for (int s = 0; s < slot_count_; ++s) {
    if (!slot_is_constant_[static_cast<std::size_t>(s)] &&
        slots[static_cast<std::size_t>(s)].is_valid())
      release_slot(s, ws);
  }
  return status;
}

namespace {

bool same_inputs(const ShapeSignature& signature, std::span<const Tensor* const> inputs) {
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Tensor* in = inputs[i];
    if (in ? !signature.input_present[i] || in->dtype() != signature.input_dtypes[i] ||
                 in->dims() != signature.input_dims[i]
           : signature.input_present[i])
      return false;
  }
  return true;
}

}  // namespace

Status Plan::resolve_output_shapes(const Step& step, StepMemo& memo) const {
  const ir::Node& node = *step.node;
  const std::size_t input_count = step.inputs.size();
  if (memo.shape_source == OutputShapeSource::kInputShapes) {
    for (std::size_t k = 0; k < memo.signatures.size(); ++k) {
      if (same_inputs(memo.signatures[k], memo.inputs)) {
        memo.current = k;
        return Status::ok();
      }
    }
  }
  std::vector<ir::ValueInfo> infos(input_count);
  for (std::size_t i = 0; i < input_count; ++i) {
    const Tensor* in = memo.inputs[i];
    if (!in) {
      infos[i].present = false;
      continue;
    }
    infos[i].dtype = in->dtype();
    infos[i].shape = ir::sym_shape_from_dims(in->dims());
    infos[i].data = in;
  }
  std::vector<ir::InferredOutput> inferred;
  auto all_known = [&] {
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0 &&
          (i >= inferred.size() || !inferred[i].rank_known || !ir::known_dims(inferred[i].shape)))
        return false;
    }
    return true;
  };
  if (memo.shape_source == OutputShapeSource::kNotYetKnown) {
    memo.shape_source = OutputShapeSource::kInputValues;
    if (step.may_memoize_shapes) {
      // Infer once without the values of the non-constant inputs: if every output dim still
      // comes out, the dims are a function of input shapes alone and can be memoized.
      std::vector<ir::ValueInfo> shapes_only = infos;
      for (std::size_t i = 0; i < input_count; ++i) {
        if (!step.input_is_constant[i]) shapes_only[i].data = nullptr;
      }
      if (ir::infer_outputs(node, shapes_only, inferred).is_ok() && all_known())
        memo.shape_source = OutputShapeSource::kInputShapes;
    }
  }
  inferred.clear();
  VOXRT_RETURN_IF_ERROR(ir::infer_outputs(node, infos, inferred));
  ShapeSignature signature;
  signature.output_dtypes.resize(step.outputs.size());
  signature.output_dims.resize(step.outputs.size());
  for (std::size_t i = 0; i < step.outputs.size(); ++i) {
    if (step.outputs[i] < 0) continue;
    auto dims = ir::known_dims(inferred[i].shape);
    if (!dims) {
      return internal_error(node.describe(), ": output ", i, " has unknown dims ",
                            ir::sym_shape_to_string(inferred[i].shape), " at run time");
    }
    signature.output_dtypes[i] = inferred[i].dtype;
    signature.output_dims[i] = std::move(*dims);
  }
  for (const Tensor* in : memo.inputs) {
    signature.input_present.push_back(in != nullptr);
    signature.input_dtypes.push_back(in ? in->dtype() : DType::kF32);
    signature.input_dims.push_back(in ? in->dims() : Dims{});
  }
  if (memo.shape_source != OutputShapeSource::kInputShapes) {
    memo.signatures.resize(1);
    memo.current = 0;
  } else if (memo.signatures.size() < kMaxShapeSignatures) {
    memo.signatures.emplace_back();
    memo.current = memo.signatures.size() - 1;
  } else {
    memo.current = memo.next_replaced;
    memo.next_replaced = (memo.next_replaced + 1) % kMaxShapeSignatures;
  }
  memo.signatures[memo.current] = std::move(signature);
  return Status::ok();
}

Status Plan::run_step(std::size_t index, PlanWorkspace& workspace, backends::KernelContext& context,
                      const StepObserver* observer) const {
  const Step& step = steps_[index];
  StepMemo& memo = workspace.steps[index];
  std::vector<Tensor>& slots = workspace.slots;
  const ir::Node& node = *step.node;
  const auto start =
      observer ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
  memo.inputs.assign(step.inputs.size(), nullptr);
  for (std::size_t i = 0; i < step.inputs.size(); ++i) {
    if (step.inputs[i] < 0) continue;
    const Tensor& in = slots[static_cast<std::size_t>(step.inputs[i])];
    if (in.is_valid()) memo.inputs[i] = &in;
  }
  memo.outputs.assign(step.outputs.size(), nullptr);
  memo.spare_outputs.resize(step.outputs.size());

  if (node.op == ir::OpKind::kIf) {
    const Tensor* cond = memo.inputs.empty() ? nullptr : memo.inputs[0];
    if (!cond || cond->element_count() != 1) {
      return invalid_argument(node.describe(), ": the condition must be a single-element tensor");
    }
    const bool take_then = cond->element_as_i64(0) != 0;
    const Plan& branch = take_then ? *step.then_plan : *step.else_plan;
    auto& branch_workspace = take_then ? memo.then_branch : memo.else_branch;
    if (!branch_workspace) branch_workspace = std::make_unique<PlanWorkspace>();
    std::vector<Tensor> branch_inputs;
    for (std::size_t i = 1; i < memo.inputs.size(); ++i)
      branch_inputs.push_back(memo.inputs[i] ? *memo.inputs[i] : Tensor());
    std::vector<Tensor> branch_outputs;
    VOXRT_RETURN_IF_ERROR(
        branch.execute(branch_inputs, branch_outputs, context, observer, branch_workspace.get())
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
    VOXRT_RETURN_IF_ERROR(resolve_output_shapes(step, memo));
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] < 0) continue;
      Tensor& out = slots[static_cast<std::size_t>(step.outputs[i])];
      Tensor& spare = memo.spare_outputs[i];
      const DType dtype = memo.signatures[memo.current].output_dtypes[i];
      const Dims& dims = memo.signatures[memo.current].output_dims[i];
      if (step.is_view && i == 0) {
        VOXRT_ASSIGN_OR_RETURN(out, memo.inputs[0]->reshaped(dims));
      } else if (spare.is_valid() && spare.dtype() == dtype && spare.dims() == dims) {
        out = std::move(spare);
      } else if (spare.is_valid() && spare.dtype() == dtype &&
                 spare.element_count() == element_count(dims)) {
        // Came back through a view of another shape.
        VOXRT_ASSIGN_OR_RETURN(out, spare.reshaped(dims));
        spare = Tensor();
      } else {
        spare = Tensor();
        out = Tensor::uninitialized(dtype, dims);
      }
      memo.outputs[i] = &out;
    }
    if (!step.is_view) {
      VOXRT_RETURN_IF_ERROR(step.kernel->run(memo.inputs, memo.outputs, context));
    }
  }
  if (observer) {
    for (std::size_t i = 0; i < step.outputs.size(); ++i) {
      if (step.outputs[i] >= 0) memo.outputs[i] = &slots[static_cast<std::size_t>(step.outputs[i])];
    }
    const double elapsed_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::vector<const Tensor*> outs(memo.outputs.begin(), memo.outputs.end());
    (*observer)(node, memo.inputs, outs, elapsed_us);
  }
  for (int s : step.release_after) release_slot(s, workspace);
  return Status::ok();
}

}  // namespace voxrt::runtime
