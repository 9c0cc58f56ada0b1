// An executable plan for one IR graph: one prepared kernel per node, in topological order,
// with value slots. Plans are immutable after compile() and shared by every ExecutionContext;
// execute() keeps all per-call state on its own stack.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/kernel.h"
#include "ir/graph.h"

namespace voxrt::runtime {

// Called after each node with its inputs and outputs and the node's wall time; used by the
// builder (autotuning inputs, memory plan), `voxrt check --mark-all` and `voxrt bench --profile`.
using StepObserver = std::function<void(const ir::Node& node, std::span<const Tensor* const> inputs,
                                        std::span<const Tensor* const> outputs, double elapsed_us)>;

enum class TacticPolicy {
  kRecorded,   // the tactic the builder stored in the node (voxrt.tactic)
  kFirstFast,  // the first non-reference tactic (builds without autotuning)
  kReference,  // tactic 0 everywhere (the oracle)
};

class Plan {
 public:
  // `graph` must outlive the plan.
  static Expected<std::unique_ptr<Plan>> compile(const ir::Graph& graph, TacticPolicy policy);

  // Inputs in graph-input order; outputs in graph-output order.
  Status execute(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
                 backends::KernelContext& context, const StepObserver* observer = nullptr) const;

  const ir::Graph& graph() const { return *graph_; }
  // The tactic chosen for each node of the top-level graph, in execution order.
  std::vector<std::pair<const ir::Node*, std::string>> tactics() const;

 private:
  struct Step {
    const ir::Node* node = nullptr;
    std::unique_ptr<backends::Kernel> kernel;
    std::string tactic_name;
    std::vector<int> inputs;   // slot per node input, -1 for omitted
    std::vector<int> outputs;  // slot per node output, -1 for omitted
    bool is_view = false;      // Reshape-like: output aliases input 0's bytes
    std::unique_ptr<Plan> then_plan, else_plan;
    std::vector<int> release_after;  // slots whose last reader is this step
  };

  Status run_step(const Step& step, std::vector<Tensor>& slots, backends::KernelContext& context,
                  const StepObserver* observer) const;

  const ir::Graph* graph_ = nullptr;
  std::vector<Step> steps_;
  int slot_count_ = 0;
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<std::pair<int, const Tensor*>> constants_;
};

}  // namespace voxrt::runtime
