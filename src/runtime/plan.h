// An executable plan for one IR graph: one prepared kernel per node, in topological order,
// with value slots. Plans are immutable after compile() and shared by every ExecutionContext;
// what a caller keeps between runs (memoized shapes, reusable buffers) lives in its own
// PlanWorkspace.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "backends/kernel.h"
#include "ir/graph.h"
#include "runtime/plan_workspace.h"

namespace voxrt::runtime {

// Called after each node with its inputs and outputs and the node's wall time; used by the
// builder (autotuning inputs, memory plan), `voxrt check --mark-all` and `voxrt bench --profile`.
using StepObserver = std::function<void(const ir::Node& node, std::span<const Tensor* const> inputs,
                                        std::span<const Tensor* const> outputs, double elapsed_us)>;

enum class TacticPolicy {
  kRecorded,   // the tactic the builder stored in the node (voxrt.tactic)
  kFirstFast,  // the first non-reference tactic (builds without autotuning)
  // kFirstFast, except that a tactic that packs its constant weights once is preferred where one
  // applies: for untuned plans run at batch 1 (INT8 calibration runs one stream at a time, and
  // OpenBLAS repacking the weights every call took half of a Conformer's calibration).
  kFirstFastPrepacked,
  kReference,  // tactic 0 everywhere (the oracle)
};

class Plan {
 public:
  // `graph` must outlive the plan. With kRecorded, `profile` picks which optimization profile's
  // recorded tactics the kernels use (runtime::recorded_tactic).
  static Expected<std::unique_ptr<Plan>> compile(const ir::Graph& graph, TacticPolicy policy,
                                                 int profile = 0);

  // Inputs in graph-input order; outputs in graph-output order. `workspace` (may be null: a
  // fresh one per call) carries memoized shapes and buffers from one call to the next; give
  // each caller its own.
  Status execute(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
                 backends::KernelContext& context, const StepObserver* observer = nullptr,
                 PlanWorkspace* workspace = nullptr) const;

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
    // Whether output dims may be memoized per input signature: not an If, and every input that
    // is not a constant is floating point (integer inputs may carry shapes or indices whose
    // values shape inference checks). The first run then confirms that inference needs no
    // input values (see OutputShapeSource).
    bool may_memoize_shapes = false;
    std::vector<bool> input_is_constant;  // per node input
  };
  struct SlotProducer {
    int step = -1;  // -1: a graph input, a constant, or a view (its bytes are not its own)
    int output = -1;
  };

  Status run_step(std::size_t index, PlanWorkspace& workspace, backends::KernelContext& context,
                  const StepObserver* observer) const;
  // Output dtypes and dims of step `index` into memo.output_*: memoized, or by shape inference.
  Status resolve_output_shapes(const Step& step, StepMemo& memo) const;
  void prepare_workspace(PlanWorkspace& workspace) const;
  // Empties a slot; a step output nobody else holds goes back to its step for the next run.
  void release_slot(int slot, PlanWorkspace& workspace) const;

  const ir::Graph* graph_ = nullptr;
  std::vector<Step> steps_;
  int slot_count_ = 0;
  std::vector<int> input_slots_;
  std::vector<int> output_slots_;
  std::vector<std::pair<int, const Tensor*>> constants_;
  std::vector<SlotProducer> producers_;  // per slot
  std::vector<bool> slot_is_constant_;   // per slot
};

}  // namespace voxrt::runtime
