// Executes a whole graph on one CUDA device. Per set of input dims a session makes a shape plan:
// shape inference on the host, one arena for every intermediate (liveness-planned, best fit),
// prepared kernel calls, pinned staging for inputs and outputs; the second run of a plan
// captures the H2D copies, every kernel and the D2H copies into one CUDA graph, so later runs are
// one graph launch plus one synchronize.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "backends/cuda/cudnn_rnn.h"
#include "backends/cuda/executor.h"
#include "backends/profile_fit.h"
#include "ir/shape_inference.h"
#include "ir/view_ops.h"
#include "runtime/engine_format.h"

namespace voxrt::backends::cuda {

namespace {

// Inputs a kernel reads from its own (repacked, converted) device copy, so the executor need
// not upload the raw constant.
bool kernel_owns_input(const ir::Node& node, std::size_t i) {
  switch (ir::op_family(node.op)) {
    case ir::OpFamily::kRecurrent: return i >= 1 && i <= 3;
    case ir::OpFamily::kDense:
      if (node.op == ir::OpKind::kEinsum) return false;  // reads every operand as it is
      if (node.op == ir::OpKind::kConv || node.op == ir::OpKind::kFusedConv)
        return i == 1 || i == 2;
      return i == 1 && node.input(1) && node.input(1)->is_constant() &&
             node.input(1)->constant->rank() == 2;
    default: return false;
  }
}

class CudaExecutable;

struct ShapePlan {
  std::vector<DevTensor> values;                 // per value id
  std::vector<std::int64_t> arena_offset;        // per value id; -1: constant or omitted
  std::vector<std::unique_ptr<CudaCall>> calls;  // per step; null for views
  // Per step: no call for this plan's shapes, because the step's output is a view into its input
  // 0 (a contiguous Slice) or its inputs were placed inside its output (an in-place Concat).
  std::vector<bool> aliased;
  // Per value: its contents when known on the host as the plan was made (the engine's constants,
  // and what shape inference computed from dims and those: Shape, Size, the arithmetic and
  // Gather/Concat/Slice on small shape tensors), else null. Per step: every output is known, so
  // the step runs nothing and its outputs are plan constants, uploaded once into `folded_device`
  // (the CUDA backend's way of running shape arithmetic whose dims the profile leaves open).
  std::vector<const Tensor*> known;
  std::vector<bool> folded;
  std::vector<std::unique_ptr<Tensor>> folded_values;  // owns what `known` points at, but constants
  void* folded_device = nullptr;
  std::vector<bool> folded_root_value;  // per value: a folded step's output, in folded_device
  std::vector<std::vector<DevTensor>> step_in, step_out;
  std::size_t arena_bytes = 0, scratch_bytes = 0, pinned_bytes = 0;
  std::vector<std::size_t> input_pinned, output_pinned;
  bool slots_mode = false;  // states gathered from / scattered to the slot pool
  // Autotuning plans only: why a step's kernel could not be prepared (its call is null then).
  std::vector<std::string> failed;
  std::size_t slots_pinned = 0;
  std::int64_t batch = 0;
  int profile = 0;  // the optimization profile these shapes fit (its tactics run); 0 if none
  cudaGraphExec_t graph = nullptr;
  int runs = 0;
  bool graph_failed = false;
  // The steps alone, without host copies (DeviceSession::enqueue: device memory in and out).
  cudaGraphExec_t steps_graph = nullptr;
  int steps_runs = 0;
  bool steps_graph_failed = false;

  ~ShapePlan() {
    drop_graph();
    if (folded_device) cudaFree(folded_device);
  }
  // Graphs hold the buffers' addresses: dropped whenever a buffer moves.
  void drop_graph() {
    if (graph) cudaGraphExecDestroy(graph);
    if (steps_graph) cudaGraphExecDestroy(steps_graph);
    graph = nullptr;
    steps_graph = nullptr;
  }
};

class CudaExecutable final : public DeviceExecutable {
 public:
  struct Step {
    const ir::Node* node = nullptr;
    std::unique_ptr<CudaKernel> kernel;  // profile 0's tactic
    std::string tactic;
    // Profiles whose recorded tactic differs from profile 0's: their kernel and tactic name,
    // indexed by profile (null / empty where profile 0's serves).
    std::vector<std::unique_ptr<CudaKernel>> profile_kernels;
    std::vector<std::string> profile_tactics;
    bool view = false;
    std::vector<int> inputs, outputs;  // value ids, -1 omitted
    // A stack of this many GRU layers run as one kernel (stack_recurrent_layers): inputs are the
    // bottom layer's X and each layer's initial_h, outputs the top layer's Y and each layer's
    // Y_h; `node` is the top layer. 0: an ordinary step.
    int stack_layers = 0;
    std::int64_t stack_hidden = 0;

    const CudaKernel* kernel_at(int profile) const {
      const auto p = static_cast<std::size_t>(profile);
      return profile > 0 && p < profile_kernels.size() && profile_kernels[p]
                 ? profile_kernels[p].get()
                 : kernel.get();
    }
    const std::string& tactic_at(int profile) const {
      const auto p = static_cast<std::size_t>(profile);
      return profile > 0 && p < profile_tactics.size() && !profile_tactics[p].empty()
                 ? profile_tactics[p]
                 : tactic;
    }
  };

  CudaExecutable(const ir::Graph& graph, Precision precision,
                 std::vector<OptimizationProfile> profiles, bool stack_recurrent)
      : graph_(&graph),
        engine_precision_(precision),
        profiles_(std::move(profiles)),
        stack_recurrent_(stack_recurrent),
        build_(precision) {}

  Status init();
  // Chains GRU -> Squeeze (a view) -> GRU ... that cuDNN can run as one multi-layer call become
  // one step (see Step::stack_layers).
  Status stack_recurrent_layers();
  Expected<std::unique_ptr<DeviceSession>> create_session() const override;
  std::vector<std::pair<const ir::Node*, std::string>> tactics(int profile) const override {
    std::vector<std::pair<const ir::Node*, std::string>> out;
    for (const Step& s : steps_) out.emplace_back(s.node, s.tactic_at(profile));
    return out;
  }

  // The first profile that admits these graph inputs (the runtime's rule; -1 without profiles):
  // the profile the public run() picked (EngineImpl::select_profile) or an error; slot runs
  // (run_slots) come here without it.
  Expected<int> fitting_profile(std::span<const Tensor> inputs) const {
    return first_fitting_profile(
        profiles_, std::min(inputs.size(), input_ids_.size()),
        [&](std::size_t i) { return values_[static_cast<std::size_t>(input_ids_[i])]->name; },
        [&](std::size_t i) { return inputs[i].dims(); });
  }

  // The first profile that admits the inputs, else 0 (the tolerant planning of shape probes).
  int profile_of(std::span<const Tensor> inputs) const {
    const Expected<int> p = fitting_profile(inputs);
    return p && *p >= 0 ? *p : 0;
  }

  const ir::Graph* graph_;
  Precision engine_precision_;
  std::vector<OptimizationProfile> profiles_;
  bool stack_recurrent_ = false;
  KernelBuildContext build_;  // its precision is set per node while kernels are made
  std::vector<Step> steps_;
  std::vector<const ir::Value*> values_;
  std::vector<int> input_ids_, output_ids_;
  std::vector<const Tensor*> host_constant_;  // per value id
  std::vector<void*> device_constant_;        // per value id
};

Status CudaExecutable::init() {
  std::unordered_map<const ir::Value*, int> id_of;
  auto id = [&](const ir::Value* v) {
    auto it = id_of.find(v);
    if (it != id_of.end()) return it->second;
    const int n = static_cast<int>(values_.size());
    id_of[v] = n;
    values_.push_back(v);
    return n;
  };
  for (const ir::Value* v : graph_->inputs) input_ids_.push_back(id(v));
  VOXRT_ASSIGN_OR_RETURN(std::vector<ir::Node*> order, graph_->topological_order());
  std::vector<std::string> failures;
  std::vector<bool> needs_device_copy;
  for (const ir::Node* node : order) {
    Step step;
    step.node = node;
    for (const ir::Value* v : node->inputs) step.inputs.push_back(v ? id(v) : -1);
    for (const ir::Value* v : node->outputs) step.outputs.push_back(v ? id(v) : -1);
    needs_device_copy.resize(values_.size(), false);
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] >= 0 && !kernel_owns_input(*node, i))
        needs_device_copy[static_cast<std::size_t>(step.inputs[i])] = true;
    }
    if (ir::is_view_op(*node)) {
      step.view = true;
      step.tactic = "view";
    } else {
      // The layer's own precision (BuilderConfig::layer_precisions) or the engine's.
      const Precision precision = layer_precision(*node, engine_precision_);
      build_.set_precision(precision);
      const auto tactics = tactics_for(*node, precision);
      if (tactics.empty()) {
        failures.push_back(str_cat(node->describe(), ": ", unsupported_reason(*node, precision)));
        continue;
      }
      TacticId tactic = tactics.size() > 1 ? tactics[1].id : tactics[0].id;
      if (node->attrs.has(runtime::kTacticAttr))
        tactic = static_cast<TacticId>(node->attrs.get_int(runtime::kTacticAttr, 0));
      const TacticInfo* info = nullptr;
      for (const auto& t : tactics) info = t.id == tactic ? &t : info;
      if (!info) {
        failures.push_back(str_cat(node->describe(), ": the engine asks for CUDA tactic ", tactic,
                                   " which this runtime does not have"));
        continue;
      }
      step.tactic = info->name;
      auto kernel = create_kernel(*node, tactic, build_);
      if (!kernel) {
        failures.push_back(kernel.status().message());
        continue;
      }
      step.kernel = std::move(*kernel);
      // The other profiles' tactics (BuilderConfig profiles tuned one by one): a kernel each
      // where it differs. Its weights are its own device copy, as the CPU's plans repack theirs.
      for (std::size_t p = 1; p < profiles_.size(); ++p) {
        const auto other =
            static_cast<TacticId>(runtime::recorded_tactic(*node, static_cast<int>(p)));
        if (!node->attrs.has(runtime::kProfileTacticsAttr) || other == tactic) continue;
        const TacticInfo* other_info = nullptr;
        for (const auto& t : tactics) other_info = t.id == other ? &t : other_info;
        if (!other_info) {
          failures.push_back(str_cat(node->describe(), ": profile ", p, " asks for CUDA tactic ",
                                     other, " which this runtime does not have"));
          continue;
        }
        auto other_kernel = create_kernel(*node, other, build_);
        if (!other_kernel) {
          failures.push_back(other_kernel.status().message());
          continue;
        }
        step.profile_kernels.resize(profiles_.size());
        step.profile_tactics.resize(profiles_.size());
        step.profile_kernels[p] = std::move(*other_kernel);
        step.profile_tactics[p] = other_info->name;
      }
    }
    steps_.push_back(std::move(step));
  }
  build_.set_precision(engine_precision_);
  if (!failures.empty()) {
    std::string all;
    for (const auto& f : failures) all += "\n  " + f;
    return unsupported(failures.size(), " node(s) cannot run on the CUDA backend:", all);
  }
  for (const ir::Value* v : graph_->outputs) {
    output_ids_.push_back(id(v));
    needs_device_copy.resize(values_.size(), false);
    needs_device_copy[static_cast<std::size_t>(output_ids_.back())] = true;
  }
  needs_device_copy.resize(values_.size(), false);
  host_constant_.assign(values_.size(), nullptr);
  device_constant_.assign(values_.size(), nullptr);
  for (std::size_t i = 0; i < values_.size(); ++i) {
    if (!values_[i]->constant) continue;
    host_constant_[i] = &*values_[i]->constant;
    if (!needs_device_copy[i]) continue;
    VOXRT_ASSIGN_OR_RETURN(
        device_constant_[i],
        build_.upload_bytes(host_constant_[i]->raw_data(), host_constant_[i]->size_bytes()));
  }
  return stack_recurrent_ ? stack_recurrent_layers() : Status::ok();
}

Status CudaExecutable::stack_recurrent_layers() {
  std::vector<std::vector<std::size_t>> readers(values_.size());
  for (std::size_t s = 0; s < steps_.size(); ++s)
    for (int v : steps_[s].inputs)
      if (v >= 0) readers[static_cast<std::size_t>(v)].push_back(s);
  std::vector<bool> is_output(values_.size(), false);
  for (int v : output_ids_) is_output[static_cast<std::size_t>(v)] = true;
  // The one step that reads value v, if exactly one step does and v is not a graph output.
  const auto only_reader = [&](int v) -> std::optional<std::size_t> {
    if (v < 0 || is_output[static_cast<std::size_t>(v)] ||
        readers[static_cast<std::size_t>(v)].size() != 1)
      return std::nullopt;
    return readers[static_cast<std::size_t>(v)][0];
  };
  const auto is_gru = [&](std::size_t s) {
    return !steps_[s].view && steps_[s].kernel && steps_[s].stack_layers == 0 &&
           steps_[s].node->op == ir::OpKind::kGRU && !steps_[s].outputs.empty();
  };
  std::vector<bool> removed(steps_.size(), false);
  for (std::size_t first = 0; first < steps_.size(); ++first) {
    if (removed[first] || !is_gru(first)) continue;
    // Follow GRU -> Squeeze -> GRU while each value has that single reader.
    std::vector<std::size_t> grus = {first}, squeezes;
    for (;;) {
      const auto squeeze = only_reader(steps_[grus.back()].outputs[0]);
      if (!squeeze || !steps_[*squeeze].view || steps_[*squeeze].node->op != ir::OpKind::kSqueeze)
        break;
      const auto next = only_reader(steps_[*squeeze].outputs[0]);
      if (!next || !is_gru(*next) || steps_[*next].inputs[0] != steps_[*squeeze].outputs[0]) break;
      std::vector<const ir::Node*> candidate;
      for (std::size_t g : grus) candidate.push_back(steps_[g].node);
      candidate.push_back(steps_[*next].node);
      // One call runs at one precision: layers with their own precision stay apart.
      if (!cudnn_rnn_stackable(candidate) ||
          layer_precision(*steps_[*next].node, engine_precision_) !=
              layer_precision(*steps_[first].node, engine_precision_))
        break;
      squeezes.push_back(*squeeze);
      grus.push_back(*next);
    }
    if (grus.size() < 2) continue;
    // The stack runs where its top layer ran, so a lower layer's Y_h must not be read before.
    const std::size_t top = grus.back();
    bool readers_after_top = true;
    for (std::size_t g : grus) {
      const auto& outs = steps_[g].outputs;
      if (outs.size() < 2 || outs[1] < 0) continue;
      for (std::size_t r : readers[static_cast<std::size_t>(outs[1])]) readers_after_top &= r > top;
    }
    if (!readers_after_top) continue;
    std::vector<const ir::Node*> layers;
    for (std::size_t g : grus) layers.push_back(steps_[g].node);
    build_.set_precision(layer_precision(*steps_[top].node, engine_precision_));
    auto kernel = make_cudnn_rnn_stack_kernel(layers, build_);
    build_.set_precision(engine_precision_);
    if (!kernel) continue;  // stays layer by layer
    Step stack;
    stack.node = steps_[top].node;
    stack.kernel = std::move(*kernel);
    stack.tactic = str_cat("cudnn_rnn_stack", grus.size());
    stack.stack_layers = static_cast<int>(grus.size());
    stack.stack_hidden = steps_[top].node->attrs.get_int("hidden_size", 0);
    stack.inputs.push_back(steps_[first].inputs[0]);
    for (std::size_t g : grus) {
      const auto& ins = steps_[g].inputs;
      stack.inputs.push_back(ins.size() > 5 ? ins[5] : -1);
    }
    stack.outputs.push_back(steps_[top].outputs[0]);
    for (std::size_t g : grus) {
      const auto& outs = steps_[g].outputs;
      stack.outputs.push_back(outs.size() > 1 ? outs[1] : -1);
    }
    for (std::size_t g : grus) removed[g] = true;
    for (std::size_t q : squeezes) removed[q] = true;
    removed[top] = false;
    steps_[top] = std::move(stack);
  }
  std::vector<Step> kept;
  for (std::size_t s = 0; s < steps_.size(); ++s)
    if (!removed[s]) kept.push_back(std::move(steps_[s]));
  steps_ = std::move(kept);
  return Status::ok();
}

class CudaSession final : public DeviceSession {
 public:
  explicit CudaSession(const CudaExecutable& exe) : exe_(exe) {
    const char* graphs = std::getenv("VOXRT_CUDA_GRAPHS");
    graphs_enabled_ = !(graphs && std::string(graphs) == "0");
    const char* step_timing = std::getenv("VOXRT_CUDA_STEP_GRAPH_TIMING");
    step_graph_timing_ = step_timing && std::string(step_timing) == "1";
    const char* zero_copy = std::getenv("VOXRT_CUDA_ZERO_COPY");
    zero_copy_enabled_ = !(zero_copy && std::string(zero_copy) == "0");
    // Tests: fill new arenas and scratch with NaN bytes, so an output no kernel wrote shows.
    const char* poison = std::getenv("VOXRT_CUDA_POISON");
    poison_ = poison && std::string(poison) == "1";
  }
  ~CudaSession() override {
    (void)finish_enqueued();  // the caller's stream may still be using our buffers
    if (enqueued_) cudaEventDestroy(enqueued_);
    plans_.clear();
    if (arena_) cudaFree(arena_);
    if (scratch_) cudaFree(scratch_);
    if (lt_workspace_) cudaFree(lt_workspace_);
    if (pinned_) cudaFreeHost(pinned_);
    if (slot_ids_) cudaFree(slot_ids_);
    for (auto& state : pool_)
      if (state.storage) cudaFree(state.storage);
    if (lt_) cublasLtDestroy(lt_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  Status init() {
    VOXRT_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    VOXRT_CUDA_TRY(cudaEventCreateWithFlags(&enqueued_, cudaEventDisableTiming));
    VOXRT_CUBLAS_TRY(cublasLtCreate(&lt_));
    VOXRT_CUDA_TRY(cudaMalloc(&lt_workspace_, kLtWorkspaceBytes));
    return Status::ok();
  }

  Status run(std::span<const Tensor> inputs, std::vector<Tensor>& outputs) override {
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, plan_for(inputs, false));
    stage_inputs(*plan, inputs);
    VOXRT_RETURN_IF_ERROR(launch(*plan));
    outputs.clear();
    for (std::size_t i = 0; i < exe_.output_ids_.size(); ++i) {
      const DevTensor& v = plan->values[static_cast<std::size_t>(exe_.output_ids_[i])];
      Tensor t = Tensor::uninitialized(v.dtype, v.dims);
      std::memcpy(t.raw_data(), pinned_ + plan->output_pinned[i], v.bytes());
      outputs.push_back(std::move(t));
    }
    return Status::ok();
  }

  Status create_state_pool(std::span<const DeviceStateSpec> states, int capacity) override {
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    if (!pool_.empty()) return failed_precondition("this session already has a state pool");
    if (capacity < 1) return invalid_argument("state pool capacity must be >= 1");
    auto find = [&](const std::vector<int>& ids, const std::string& name) {
      for (std::size_t i = 0; i < ids.size(); ++i) {
        if (exe_.values_[static_cast<std::size_t>(ids[i])]->name == name)
          return static_cast<int>(i);
      }
      return -1;
    };
    for (const auto& spec : states) {
      PoolState st;
      st.input = find(exe_.input_ids_, spec.input);
      st.output = find(exe_.output_ids_, spec.output);
      if (st.input < 0 || st.output < 0) {
        return not_found("state pair ", spec.input, ":", spec.output,
                         ": no such graph input/output");
      }
      const ir::Value* v = exe_.values_[static_cast<std::size_t>(
          exe_.input_ids_[static_cast<std::size_t>(st.input)])];
      if (!v->rank_known || spec.batch_axis < 0 ||
          spec.batch_axis >= static_cast<int>(v->shape.size()))
        return invalid_argument("state '", spec.input,
                                "': needs an input of known rank with the batch axis inside it");
      st.axis = spec.batch_axis;
      st.dims = Dims(v->shape.size(), 1);
      for (std::size_t d = 0; d < v->shape.size(); ++d) {
        if (static_cast<int>(d) == spec.batch_axis) continue;
        if (!v->shape[d].is_known())
          return invalid_argument("state '", spec.input, "': dim ", d, " must be static");
        st.dims[d] = v->shape[d].value;
        (static_cast<int>(d) < spec.batch_axis ? st.outer : st.inner) *= v->shape[d].value;
      }
      st.dtype = v->dtype;
      st.row_bytes = st.inner * static_cast<std::int64_t>(dtype_size_bytes(v->dtype));
      st.bytes_per_slot = static_cast<std::size_t>(st.outer * st.row_bytes);
      VOXRT_CUDA_TRY(
          cudaMalloc(&st.storage, st.bytes_per_slot * static_cast<std::size_t>(capacity)));
      VOXRT_CUDA_TRY(
          cudaMemset(st.storage, 0, st.bytes_per_slot * static_cast<std::size_t>(capacity)));
      pool_.push_back(st);
    }
    VOXRT_CUDA_TRY(cudaMalloc(&slot_ids_, static_cast<std::size_t>(capacity) * sizeof(int)));
    capacity_ = capacity;
    return Status::ok();
  }

  Status run_slots(std::span<const Tensor> inputs, std::span<const int> slots,
                   std::vector<Tensor>& outputs) override {
    if (pool_.empty()) return failed_precondition("run_slots: create_state_pool first");
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    const std::size_t stream_inputs = exe_.input_ids_.size() - pool_.size();
    if (inputs.size() != stream_inputs)
      return invalid_argument("run_slots takes ", stream_inputs, " non-state inputs, got ",
                              inputs.size());
    if (slots.empty() || static_cast<int>(slots.size()) > capacity_)
      return invalid_argument("run_slots: 1..", capacity_, " slots, got ", slots.size());
    std::vector<bool> seen(static_cast<std::size_t>(capacity_), false);
    for (int s : slots) {
      if (s < 0 || s >= capacity_ || seen[static_cast<std::size_t>(s)])
        return invalid_argument("run_slots: slot ", s, " is out of range or repeated");
      seen[static_cast<std::size_t>(s)] = true;
    }
    // The full input list: stream inputs in order, shape-only placeholders for the states.
    std::vector<Tensor> full;
    std::size_t next = 0;
    for (std::size_t i = 0; i < exe_.input_ids_.size(); ++i) {
      const PoolState* st = state_for_input(i);
      if (!st) {
        full.push_back(inputs[next++]);
        continue;
      }
      Dims dims = st->dims;
      dims[static_cast<std::size_t>(st->axis)] = static_cast<std::int64_t>(slots.size());
      // No host data: the state lives on the device (and a null pointer keeps make_plan from
      // reading a small integer state as a shape operand).
      full.push_back(Tensor::wrap(st->dtype, dims, nullptr, nullptr));
    }
    // A batch outside every profile would run a plan whose shapes the builder specialised for
    // other batches (and fail deep inside, or worse): refuse it here, as run() does.
    VOXRT_RETURN_IF_ERROR(exe_.fitting_profile(full).status());
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, plan_for(full, true));
    for (std::size_t i = 0; i < full.size(); ++i) {
      if (!state_for_input(i))
        std::memcpy(pinned_ + plan->input_pinned[i], full[i].raw_data(), full[i].size_bytes());
    }
    std::memcpy(pinned_ + plan->slots_pinned, slots.data(), slots.size() * sizeof(int));
    VOXRT_RETURN_IF_ERROR(launch(*plan));
    outputs.clear();
    for (std::size_t i = 0; i < exe_.output_ids_.size(); ++i) {
      if (state_for_output(i)) continue;
      const DevTensor& v = plan->values[static_cast<std::size_t>(exe_.output_ids_[i])];
      Tensor t = Tensor::uninitialized(v.dtype, v.dims);
      std::memcpy(t.raw_data(), pinned_ + plan->output_pinned[i], v.bytes());
      outputs.push_back(std::move(t));
    }
    return Status::ok();
  }

  Status reset_slot(int slot) override {
    if (slot < 0 || slot >= capacity_) return invalid_argument("slot ", slot, " out of range");
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    for (const auto& st : pool_) {
      VOXRT_CUDA_TRY(cudaMemsetAsync(
          static_cast<char*>(st.storage) + st.bytes_per_slot * static_cast<std::size_t>(slot), 0,
          st.bytes_per_slot, stream_));
    }
    VOXRT_CUDA_TRY(cudaStreamSynchronize(stream_));
    return Status::ok();
  }

  Expected<Tensor> read_slot_state(int slot, std::size_t index) override {
    if (slot < 0 || slot >= capacity_ || index >= pool_.size())
      return invalid_argument("read_slot_state: slot ", slot, " / state ", index, " out of range");
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    const PoolState& st = pool_[index];
    Tensor t = Tensor::uninitialized(st.dtype, st.dims);  // batch dim 1
    VOXRT_CUDA_TRY(cudaMemcpy(
        t.raw_data(),
        static_cast<char*>(st.storage) + st.bytes_per_slot * static_cast<std::size_t>(slot),
        st.bytes_per_slot, cudaMemcpyDeviceToHost));
    return t;
  }

 private:
  struct PoolState {
    int input = -1, output = -1;  // indices into the graph's inputs / outputs
    int axis = 0;
    Dims dims;                  // with batch 1
    DType dtype = DType::kF32;  // any: the pool moves rows of bytes
    std::int64_t outer = 1, inner = 1;
    std::int64_t row_bytes = 0;  // inner elements
    std::size_t bytes_per_slot = 0;
    void* storage = nullptr;  // [capacity, outer, inner]
  };

  const PoolState* state_for_input(std::size_t i) const {
    for (const auto& st : pool_)
      if (st.input == static_cast<int>(i)) return &st;
    return nullptr;
  }
  const PoolState* state_for_output(std::size_t i) const {
    for (const auto& st : pool_)
      if (st.output == static_cast<int>(i)) return &st;
    return nullptr;
  }
  Status launch(ShapePlan& plan_ref) {
    ShapePlan* plan = &plan_ref;
    if (plan->graph) {
      VOXRT_CUDA_TRY(cudaGraphLaunch(plan->graph, stream_));
    } else if (graphs_enabled_ && plan->runs > 0 && !plan->graph_failed) {
      VOXRT_RETURN_IF_ERROR(capture(*plan));
      if (plan->graph) {
        VOXRT_CUDA_TRY(cudaGraphLaunch(plan->graph, stream_));
      } else {
        VOXRT_RETURN_IF_ERROR(enqueue_all(*plan));
      }
    } else {
      VOXRT_RETURN_IF_ERROR(enqueue_all(*plan));
    }
    VOXRT_CUDA_TRY(cudaStreamSynchronize(stream_));
    ++plan->runs;
    return Status::ok();
  }

 public:
  Expected<std::vector<double>> run_profiled(std::span<const Tensor> inputs,
                                             int iterations) override {
    // A tolerant plan: a step whose kernel cannot be prepared or enqueued at these shapes is
    // skipped and reported as -1, so one failing candidate does not hide the other nodes' times.
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, plan_for(inputs, false, true));
    stage_inputs(*plan, inputs);
    const std::size_t n = exe_.steps_.size();
    std::vector<bool> failed(n, false);
    for (std::size_t s = 0; s < n; ++s) failed[s] = !plan->failed[s].empty();
    for (std::size_t s = 0; s < n; ++s) {  // warm-up
      if (plan->calls[s] && !failed[s]) failed[s] = !enqueue_step(*plan, s).is_ok();
    }
    VOXRT_CUDA_TRY(cudaStreamSynchronize(stream_));
    // With VOXRT_CUDA_STEP_GRAPH_TIMING=1 each step is timed as a CUDA graph of its own,
    // replayed, as the runtime replays a plan. Timed eagerly, a tactic with host work per call
    // (cuDNN's RNN) is charged for the gaps that work leaves on the GPU, gaps a replayed graph
    // does not have. A step that cannot be captured is timed eagerly. Opt-in until it has run
    // on a device (written in a session without one).
    std::vector<cudaGraphExec_t> step_graphs(n, nullptr);
    struct GraphsGone {
      std::vector<cudaGraphExec_t>& graphs;
      ~GraphsGone() {
        for (cudaGraphExec_t g : graphs)
          if (g) cudaGraphExecDestroy(g);
      }
    } graphs_gone{step_graphs};
    if (graphs_enabled_ && step_graph_timing_) {
      for (std::size_t s = 0; s < n; ++s)
        if (plan->calls[s] && !failed[s]) step_graphs[s] = capture_steps(*plan, s, s + 1);
      VOXRT_CUDA_TRY(cudaStreamSynchronize(stream_));
    }
    std::vector<cudaEvent_t> events(n + 1, nullptr);
    for (auto& e : events) VOXRT_CUDA_TRY(cudaEventCreate(&e));
    std::vector<std::vector<double>> samples(n);
    Status status = Status::ok();
    for (int it = 0; it < std::max(iterations, 1) && status.is_ok(); ++it) {
      for (std::size_t s = 0; s < n && status.is_ok(); ++s) {
        cudaEventRecord(events[s], stream_);
        if (step_graphs[s]) {
          status = cuda_status(cudaGraphLaunch(step_graphs[s], stream_), "step graph launch");
        } else if (plan->calls[s] && !failed[s]) {
          status = enqueue_step(*plan, s);
        }
      }
      cudaEventRecord(events[n], stream_);
      if (!status.is_ok()) break;
      status = cuda_status(cudaStreamSynchronize(stream_), "profiled run");
      for (std::size_t s = 0; s < n && status.is_ok(); ++s) {
        float ms = 0;
        cudaEventElapsedTime(&ms, events[s], events[s + 1]);
        samples[s].push_back(ms * 1000.0);
      }
    }
    for (auto& e : events) cudaEventDestroy(e);
    VOXRT_RETURN_IF_ERROR(status);
    std::vector<double> medians(n, 0.0);
    for (std::size_t s = 0; s < n; ++s) {
      auto& v = samples[s];
      std::sort(v.begin(), v.end());
      medians[s] = failed[s] ? -1.0 : v.empty() ? 0.0 : v[v.size() / 2];
    }
    return medians;
  }

  int last_profile() const override { return last_profile_; }

  Expected<std::vector<double>> time_compute(std::span<const Tensor> inputs,
                                             int iterations) override {
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, plan_for(inputs, false));
    stage_inputs(*plan, inputs);
    VOXRT_RETURN_IF_ERROR(launch(*plan));  // the inputs now sit in the arena
    // The steps alone, without the input and output copies, as one graph when graphs are on.
    cudaGraphExec_t steps_graph = nullptr;
    if (graphs_enabled_ && !plan->graph_failed)
      steps_graph = capture_steps(*plan, 0, exe_.steps_.size());
    const auto once = [&]() -> Status {
      if (steps_graph) return cuda_status(cudaGraphLaunch(steps_graph, stream_), "graph launch");
      for (std::size_t s = 0; s < exe_.steps_.size(); ++s)
        if (plan->calls[s]) VOXRT_RETURN_IF_ERROR(enqueue_step(*plan, s));
      return Status::ok();
    };
    cudaEvent_t start = nullptr, stop = nullptr;
    VOXRT_CUDA_TRY(cudaEventCreate(&start));
    VOXRT_CUDA_TRY(cudaEventCreate(&stop));
    std::vector<double> ms;
    Status status = once();  // warm-up
    if (status.is_ok()) status = cuda_status(cudaStreamSynchronize(stream_), "warm-up");
    for (int it = 0; it < std::max(iterations, 1) && status.is_ok(); ++it) {
      cudaEventRecord(start, stream_);
      status = once();
      cudaEventRecord(stop, stream_);
      if (status.is_ok()) status = cuda_status(cudaEventSynchronize(stop), "timed run");
      float elapsed = 0;
      if (status.is_ok()) cudaEventElapsedTime(&elapsed, start, stop);
      ms.push_back(elapsed);
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (steps_graph) cudaGraphExecDestroy(steps_graph);
    VOXRT_RETURN_IF_ERROR(status);
    return ms;
  }

  Expected<std::vector<Dims>> output_dims(std::span<const DeviceTensor> inputs) override {
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, device_io_plan(inputs));
    std::vector<Dims> dims;
    for (int v : exe_.output_ids_) dims.push_back(plan->values[static_cast<std::size_t>(v)].dims);
    return dims;
  }

  Status enqueue(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                 void* stream) override {
    if (!stream) return invalid_argument("enqueue: no stream given (a cudaStream_t)");
    VOXRT_ASSIGN_OR_RETURN(ShapePlan * plan, device_io_plan(inputs));
    if (outputs.size() != exe_.output_ids_.size())
      return invalid_argument("enqueue: the graph has ", exe_.output_ids_.size(), " outputs, got ",
                              outputs.size());
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const DevTensor& v = plan->values[static_cast<std::size_t>(exe_.output_ids_[i])];
      const std::string& name = exe_.values_[static_cast<std::size_t>(exe_.output_ids_[i])]->name;
      if (!outputs[i].data) return invalid_argument("enqueue: output '", name, "' has no buffer");
      if (outputs[i].dtype != v.dtype || outputs[i].dims != v.dims) {
        return invalid_argument("enqueue: output '", name, "' must be ", dtype_name(v.dtype), " ",
                                dims_to_string(v.dims), " for these inputs, got ",
                                dtype_name(outputs[i].dtype), " ", dims_to_string(outputs[i].dims));
      }
    }
    auto* caller = static_cast<cudaStream_t>(stream);
    // After this session's previous run, whatever stream that used.
    if (enqueue_pending_) VOXRT_CUDA_TRY(cudaStreamWaitEvent(caller, enqueued_, 0));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const DevTensor& v = plan->values[static_cast<std::size_t>(exe_.input_ids_[i])];
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(v.data, inputs[i].data, v.bytes(), cudaMemcpyDeviceToDevice, caller));
    }
    // The first run of a plan goes eagerly (lazy library set-up must not land in a capture),
    // later ones replay its steps as one graph.
    if (graphs_enabled_ && plan->steps_runs > 0 && !plan->steps_graph &&
        !plan->steps_graph_failed) {
      plan->steps_graph = capture_steps(*plan, 0, exe_.steps_.size());
      plan->steps_graph_failed = plan->steps_graph == nullptr;
    }
    if (plan->steps_graph) {
      VOXRT_CUDA_TRY(cudaGraphLaunch(plan->steps_graph, caller));
    } else {
      caller_stream_ = caller;
      Status enqueued = Status::ok();
      for (std::size_t s = 0; s < exe_.steps_.size() && enqueued.is_ok(); ++s)
        if (plan->calls[s]) enqueued = enqueue_step(*plan, s);
      caller_stream_ = nullptr;
      VOXRT_RETURN_IF_ERROR(enqueued);
    }
    ++plan->steps_runs;
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const DevTensor& v = plan->values[static_cast<std::size_t>(exe_.output_ids_[i])];
      VOXRT_CUDA_TRY(
          cudaMemcpyAsync(outputs[i].data, v.data, v.bytes(), cudaMemcpyDeviceToDevice, caller));
    }
    VOXRT_CUDA_TRY(cudaEventRecord(enqueued_, caller));
    enqueue_pending_ = true;
    return Status::ok();
  }

 private:
  // Blocks until the last run enqueued on a caller's stream is done with our buffers.
  Status finish_enqueued() {
    if (!enqueue_pending_) return Status::ok();
    enqueue_pending_ = false;
    return cuda_status(cudaEventSynchronize(enqueued_), "waiting for the enqueued run");
  }

  // The plan for device-memory inputs: their dims decide it; their data stays on the device, so
  // a graph whose output shapes depend on an input's values cannot be planned this way.
  Expected<ShapePlan*> device_io_plan(std::span<const DeviceTensor> inputs) {
    if (inputs.size() != exe_.input_ids_.size())
      return invalid_argument("the graph takes ", exe_.input_ids_.size(), " inputs, got ",
                              inputs.size());
    std::vector<Tensor> shapes;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const std::string& name = exe_.values_[static_cast<std::size_t>(exe_.input_ids_[i])]->name;
      if (!inputs[i].data) return invalid_argument("input '", name, "' has no device buffer");
      // A host tensor of these dims whose data is never read (null: not a shape operand).
      shapes.push_back(Tensor::wrap(inputs[i].dtype, inputs[i].dims, nullptr, nullptr));
    }
    for (std::size_t i = 0; i < shape_operand_inputs_.size(); ++i) {
      if (!shape_operand_inputs_[i]) continue;
      return unsupported(
          "input '", exe_.values_[static_cast<std::size_t>(exe_.input_ids_[i])]->name,
          "' decides output shapes through its values, which must be read on the host: run this "
          "engine with host tensors (run), not device memory (enqueue)");
    }
    auto plan = plan_for(shapes, false);
    if (!plan) {
      return Status(plan.status().code(),
                    str_cat(plan.status().message(),
                            " (inputs in device memory: an output shape that depends on an "
                            "input's values cannot be planned; use run with host tensors)"));
    }
    return *plan;
  }

  Expected<ShapePlan*> plan_for(std::span<const Tensor> inputs, bool slots_mode,
                                bool tolerant = false) {
    if (inputs.size() != exe_.input_ids_.size())
      return invalid_argument("the graph takes ", exe_.input_ids_.size(), " inputs, got ",
                              inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const ir::Value* v = exe_.values_[static_cast<std::size_t>(exe_.input_ids_[i])];
      if (!inputs[i].is_valid()) return invalid_argument("input '", v->name, "' is missing");
      if (inputs[i].dtype() != v->dtype) {
        return invalid_argument("input '", v->name, "': expected dtype ", dtype_name(v->dtype),
                                ", got ", dtype_name(inputs[i].dtype()));
      }
    }
    const auto plan_key = [&] {
      std::vector<std::int64_t> key{(slots_mode ? 1 : 0) + (tolerant ? 2 : 0)};
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        key.push_back(static_cast<std::int64_t>(inputs[i].rank()));
        for (std::int64_t d : inputs[i].dims()) key.push_back(d);
        if (i < shape_operand_inputs_.size() && shape_operand_inputs_[i]) {
          // Its values decided output shapes: a plan holds for these values only.
          const std::optional<std::vector<std::int64_t>> values = host_integers(inputs[i]);
          key.push_back(-1);
          if (values) key.insert(key.end(), values->begin(), values->end());
        }
      }
      return key;
    };
    std::vector<std::int64_t> key = plan_key();
    auto it = plans_.find(key);
    if (it == plans_.end()) {
      VOXRT_ASSIGN_OR_RETURN(auto plan, make_plan(inputs, tolerant));
      key = plan_key();  // make_plan may have found inputs whose values shape the outputs
      plan->slots_mode = slots_mode;
      if (slots_mode) {
        plan->batch =
            static_cast<std::int64_t>(inputs[static_cast<std::size_t>(pool_.front().input)].dim(
                static_cast<std::size_t>(pool_.front().axis)));
        plan->slots_pinned = plan->pinned_bytes;
        plan->pinned_bytes += align_up(static_cast<std::size_t>(capacity_) * sizeof(int));
      }
      it = plans_.emplace(key, std::move(plan)).first;
      VOXRT_RETURN_IF_ERROR(fit(*it->second));
    }
    last_profile_ = it->second->profile;
    return it->second.get();
  }

  template <typename Step>
  static bool all_dims_known(const Step& step, const std::vector<ir::InferredOutput>& inferred) {
    for (std::size_t i = 0; i < step.outputs.size() && i < inferred.size(); ++i) {
      if (step.outputs[i] >= 0 && !ir::known_dims(inferred[i].shape)) return false;
    }
    return true;
  }

  // The values of a small integer host tensor (a shape or axes operand), or nothing.
  static std::optional<std::vector<std::int64_t>> host_integers(const Tensor& t) {
    if (t.raw_data() == nullptr || t.element_count() > kMaxShapeOperandElements)
      return std::nullopt;
    std::vector<std::int64_t> values;
    for (std::int64_t e = 0; e < t.element_count(); ++e) {
      if (t.dtype() == DType::kI64) {
        values.push_back(t.data<std::int64_t>()[e]);
      } else if (t.dtype() == DType::kI32) {
        values.push_back(t.data<std::int32_t>()[e]);
      } else {
        return std::nullopt;
      }
    }
    return values;
  }

  // Points the step's graph-input operands that are small integer host tensors at the caller's
  // data, and marks those inputs as shaping the plan (plan_for then keys plans by their values).
  // False when there is none.
  template <typename Step>
  bool lend_shape_operands(const Step& step, std::span<const Tensor> inputs,
                           const std::unordered_map<int, std::size_t>& input_index_of_value,
                           std::vector<ir::ValueInfo>& infos) {
    bool lent = false;
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      if (step.inputs[i] < 0 || infos[i].data) continue;
      auto it = input_index_of_value.find(step.inputs[i]);
      if (it == input_index_of_value.end() || !host_integers(inputs[it->second])) continue;
      infos[i].data = &inputs[it->second];
      if (shape_operand_inputs_.size() < inputs.size()) shape_operand_inputs_.resize(inputs.size());
      shape_operand_inputs_[it->second] = true;
      lent = true;
    }
    return lent;
  }

  Expected<std::unique_ptr<ShapePlan>> make_plan(std::span<const Tensor> inputs, bool tolerant) {
    auto plan = std::make_unique<ShapePlan>();
    plan->profile = exe_.profile_of(inputs);
    const std::size_t value_count = exe_.values_.size();
    plan->values.resize(value_count);
    plan->arena_offset.assign(value_count, -1);
    plan->known.assign(value_count, nullptr);
    plan->folded.assign(exe_.steps_.size(), false);
    std::vector<bool> known(value_count, false);
    for (std::size_t i = 0; i < value_count; ++i) {
      if (const Tensor* c = exe_.host_constant_[i]) {
        plan->values[i] = DevTensor{exe_.device_constant_[i], c->dtype(), c->dims()};
        plan->known[i] = c;
        known[i] = true;
      }
    }
    std::unordered_map<int, std::size_t> input_index_of_value;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const auto v = static_cast<std::size_t>(exe_.input_ids_[i]);
      plan->values[v] = DevTensor{nullptr, inputs[i].dtype(), inputs[i].dims()};
      known[v] = true;
      input_index_of_value.emplace(exe_.input_ids_[i], i);
    }
    // Storage root of each value (views share their input's storage), and where in the root's
    // storage the value starts (non-zero for a Slice that is a contiguous run of its input).
    std::vector<int> root(value_count);
    for (std::size_t i = 0; i < value_count; ++i) root[i] = static_cast<int>(i);
    std::vector<std::size_t> root_shift(value_count, 0);
    plan->aliased.assign(exe_.steps_.size(), false);
    const int steps = static_cast<int>(exe_.steps_.size());
    for (std::size_t s = 0; s < exe_.steps_.size(); ++s) {
      const auto& step = exe_.steps_[s];
      std::vector<ir::ValueInfo> infos(step.inputs.size());
      for (std::size_t i = 0; i < step.inputs.size(); ++i) {
        const int v = step.inputs[i];
        if (v < 0) {
          infos[i].present = false;
          continue;
        }
        if (!known[static_cast<std::size_t>(v)])
          return internal_error(step.node->describe(), ": input ", i, " not computed yet");
        const DevTensor& t = plan->values[static_cast<std::size_t>(v)];
        infos[i].dtype = t.dtype;
        infos[i].shape = ir::sym_shape_from_dims(t.dims);
        infos[i].data = plan->known[static_cast<std::size_t>(v)];
      }
      std::vector<ir::InferredOutput> inferred;
      if (step.stack_layers > 0) {
        // Not the top node's own inputs: its outputs' dims follow from X = [seq, batch, input].
        const Dims& x = plan->values[static_cast<std::size_t>(step.inputs[0])].dims;
        if (x.size() != 3) return invalid_argument(step.node->describe(), ": X must be rank 3");
        const std::int64_t seq = x[0], batch = x[1], hidden = step.stack_hidden;
        const auto f32_output = [](Dims dims) {
          ir::InferredOutput output;
          output.shape = ir::sym_shape_from_dims(dims);
          return output;
        };
        inferred.push_back(f32_output({seq, 1, batch, hidden}));
        for (int l = 0; l < step.stack_layers; ++l)
          inferred.push_back(f32_output({1, batch, hidden}));
      } else {
        VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*step.node, infos, inferred));
      }
      if (!all_dims_known(step, inferred) &&
          lend_shape_operands(step, inputs, input_index_of_value, infos)) {
        // An output's dims come from the values of a graph input (Reshape's shape, the axes
        // of Squeeze/Unsqueeze): the caller passed them as host tensors, so read them there.
        inferred.clear();
        VOXRT_RETURN_IF_ERROR(ir::infer_outputs(*step.node, infos, inferred));
      }
      for (std::size_t i = 0; i < step.outputs.size(); ++i) {
        const int v = step.outputs[i];
        if (v < 0) continue;
        auto dims = ir::known_dims(inferred[i].shape);
        if (!dims) {
          return internal_error(step.node->describe(), ": output ", i, " has unknown dims ",
                                ir::sym_shape_to_string(inferred[i].shape));
        }
        plan->values[static_cast<std::size_t>(v)] = DevTensor{nullptr, inferred[i].dtype, *dims};
        known[static_cast<std::size_t>(v)] = true;
        if (inferred[i].data && !step.view) {
          // An owned copy: lent shape operands are the caller's tensors, gone after this call.
          plan->folded_values.push_back(std::make_unique<Tensor>(inferred[i].data->clone()));
          plan->known[static_cast<std::size_t>(v)] = plan->folded_values.back().get();
        } else if (step.view && i == 0 && plan->known[static_cast<std::size_t>(step.inputs[0])]) {
          // A view of known contents is known too (the same bytes, other dims).
          auto viewed = plan->known[static_cast<std::size_t>(step.inputs[0])]->reshaped(*dims);
          if (viewed) {
            plan->folded_values.push_back(std::make_unique<Tensor>(std::move(*viewed)));
            plan->known[static_cast<std::size_t>(v)] = plan->folded_values.back().get();
          }
        }
        if (step.view && i == 0) {
          const auto in0 = static_cast<std::size_t>(step.inputs[0]);
          root[static_cast<std::size_t>(v)] = root[in0];
          root_shift[static_cast<std::size_t>(v)] = root_shift[in0];
        }
      }
      if (!step.view && step.stack_layers == 0) {
        bool all_known = !step.outputs.empty();
        for (int v : step.outputs)
          if (v >= 0 && !plan->known[static_cast<std::size_t>(v)]) all_known = false;
        if (all_known) {
          plan->folded[s] = true;
          continue;
        }
      }
      const CudaKernel* kernel = step.kernel_at(plan->profile);
      if (!step.view && kernel && step.outputs.size() == 1 && step.outputs[0] >= 0 &&
          !step.inputs.empty() && step.inputs[0] >= 0) {
        const auto in0 = static_cast<std::size_t>(step.inputs[0]);
        const auto out0 = static_cast<std::size_t>(step.outputs[0]);
        const DevTensor& source = plan->values[in0];
        if (source.dtype == plan->values[out0].dtype) {
          std::vector<DevTensor> step_inputs;
          for (int v : step.inputs) {
            DevTensor t = v < 0 ? DevTensor{} : plan->values[static_cast<std::size_t>(v)];
            t.data = nullptr;
            if (v >= 0) t.host = plan->known[static_cast<std::size_t>(v)];
            step_inputs.push_back(std::move(t));
          }
          if (auto first = kernel->aliases_input(step_inputs, plan->values[out0].dims)) {
            plan->aliased[s] = true;
            root[out0] = root[in0];
            root_shift[out0] =
                root_shift[in0] + static_cast<std::size_t>(*first) * dtype_size_bytes(source.dtype);
          }
        }
      }
      if (!plan->aliased[s]) place_concat_parts(s, *plan, root, root_shift);
    }
    VOXRT_RETURN_IF_ERROR(upload_folded(*plan, root));
    // Liveness of each arena root: [first, last] over step positions (inputs at -1, outputs
    // live to the end).
    std::vector<int> first(value_count, 1 << 30), last(value_count, -2);
    auto touch = [&](int v, int at) {
      const auto r = static_cast<std::size_t>(root[static_cast<std::size_t>(v)]);
      if (exe_.host_constant_[r] || folded_root(*plan, r)) return;
      first[r] = std::min(first[r], at);
      last[r] = std::max(last[r], at);
    };
    for (int v : exe_.input_ids_) touch(v, -1);
    for (int s = 0; s < steps; ++s) {
      for (int v : exe_.steps_[static_cast<std::size_t>(s)].inputs)
        if (v >= 0) touch(v, s);
      for (int v : exe_.steps_[static_cast<std::size_t>(s)].outputs)
        if (v >= 0) touch(v, s);
    }
    for (int v : exe_.output_ids_) touch(v, steps);
    struct Block {
      std::size_t root, bytes;
      std::size_t offset = 0;
    };
    std::vector<Block> blocks;
    for (std::size_t r = 0; r < value_count; ++r) {
      if (last[r] >= -1 && root[r] == static_cast<int>(r))
        blocks.push_back({r, align_up(std::max<std::size_t>(plan->values[r].bytes(), 1))});
    }
    std::sort(blocks.begin(), blocks.end(),
              [](const Block& a, const Block& b) { return a.bytes > b.bytes; });
    std::vector<const Block*> placed;
    for (Block& b : blocks) {
      std::vector<std::pair<std::size_t, std::size_t>> busy;
      for (const Block* p : placed) {
        if (first[p->root] <= last[b.root] && first[b.root] <= last[p->root])
          busy.emplace_back(p->offset, p->offset + p->bytes);
      }
      std::sort(busy.begin(), busy.end());
      std::size_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + b.bytes <= begin) break;
        offset = std::max(offset, end);
      }
      b.offset = offset;
      plan->arena_bytes = std::max(plan->arena_bytes, offset + b.bytes);
      placed.push_back(&b);
    }
    std::vector<std::int64_t> root_offset(value_count, -1);
    for (const Block& b : blocks) root_offset[b.root] = static_cast<std::int64_t>(b.offset);
    for (std::size_t v = 0; v < value_count; ++v) {
      const std::int64_t at = root_offset[static_cast<std::size_t>(root[v])];
      plan->arena_offset[v] = at < 0 ? at : at + static_cast<std::int64_t>(root_shift[v]);
    }
    // Constants viewed by a view op: the view aliases the device constant (or the plan's).
    for (std::size_t v = 0; v < value_count; ++v) {
      const auto r = static_cast<std::size_t>(root[v]);
      if (r == v) continue;
      void* base = exe_.host_constant_[r]  ? exe_.device_constant_[r]
                   : folded_root(*plan, r) ? plan->values[r].data
                                           : nullptr;
      if (exe_.host_constant_[r] || folded_root(*plan, r))
        plan->values[v].data = base ? static_cast<char*>(base) + root_shift[v] : nullptr;
    }
    // Prepared calls.
    plan->calls.resize(exe_.steps_.size());
    plan->failed.resize(exe_.steps_.size());
    plan->step_in.resize(exe_.steps_.size());
    plan->step_out.resize(exe_.steps_.size());
    for (std::size_t s = 0; s < exe_.steps_.size(); ++s) {
      const auto& step = exe_.steps_[s];
      if (step.view || plan->aliased[s] || plan->folded[s]) continue;
      fill_step(*plan, s);
      auto call = step.kernel_at(plan->profile)->prepare(plan->step_in[s], plan->step_out[s], lt_);
      if (!call && tolerant) {
        plan->failed[s] = call.status().with_context(step.node->describe()).message();
        continue;
      }
      if (!call) return call.status().with_context(step.node->describe());
      plan->scratch_bytes = std::max(plan->scratch_bytes, (*call)->scratch_bytes());
      plan->calls[s] = std::move(*call);
    }
    std::size_t pinned = 0;
    for (int v : exe_.input_ids_) {
      plan->input_pinned.push_back(pinned);
      pinned += align_up(plan->values[static_cast<std::size_t>(v)].bytes());
    }
    for (int v : exe_.output_ids_) {
      plan->output_pinned.push_back(pinned);
      pinned += align_up(plan->values[static_cast<std::size_t>(v)].bytes());
    }
    plan->pinned_bytes = pinned;
    return plan;
  }

  // A Concat whose parts are contiguous runs of its output: re-root each part (and every view
  // of it) into the output's storage, so the parts' producers write the output and the Concat
  // runs nothing. A part must be computed by a kernel (not a graph input, constant or a view of
  // other storage) and appear once.
  void place_concat_parts(std::size_t s, ShapePlan& plan, std::vector<int>& root,
                          std::vector<std::size_t>& root_shift) const {
    const auto& step = exe_.steps_[s];
    const CudaKernel* kernel = step.kernel_at(plan.profile);
    if (step.view || !kernel || step.outputs.size() != 1 || step.outputs[0] < 0 ||
        step.inputs.size() < 2)
      return;
    const auto whole = static_cast<std::size_t>(step.outputs[0]);
    if (root[whole] != step.outputs[0]) return;
    std::vector<Dims> parts;
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      const int p = step.inputs[i];
      if (p < 0) return;
      const auto pu = static_cast<std::size_t>(p);
      if (root[pu] != p || exe_.host_constant_[pu] || plan.known[pu] ||
          plan.values[pu].dtype != plan.values[whole].dtype)
        return;
      for (int input : exe_.input_ids_)
        if (input == p) return;
      for (std::size_t j = 0; j < i; ++j)
        if (step.inputs[j] == p) return;
      parts.push_back(plan.values[pu].dims);
    }
    const auto offsets = kernel->places_inputs_in_output(parts, plan.values[whole].dims);
    if (!offsets) return;
    const std::size_t element_bytes = dtype_size_bytes(plan.values[whole].dtype);
    for (std::size_t i = 0; i < step.inputs.size(); ++i) {
      const int p = step.inputs[i];
      const std::size_t shift = static_cast<std::size_t>((*offsets)[i]) * element_bytes;
      for (std::size_t v = 0; v < root.size(); ++v) {
        if (root[v] != p) continue;
        root[v] = static_cast<int>(whole);
        root_shift[v] += shift;
      }
    }
    plan.aliased[s] = true;
  }

  // Whether value r is the root of a step's output that the plan computed on the host.
  static bool folded_root(const ShapePlan& plan, std::size_t r) {
    return r < plan.folded_root_value.size() && plan.folded_root_value[r];
  }

  // Uploads the outputs of the steps folded at plan time (their roots) into one device buffer
  // and points their values at it; they take no arena space.
  Status upload_folded(ShapePlan& plan, const std::vector<int>& root) {
    plan.folded_root_value.assign(plan.values.size(), false);
    std::size_t bytes = 0;
    std::vector<std::pair<std::size_t, std::size_t>> placed;  // value, offset
    for (std::size_t s = 0; s < exe_.steps_.size(); ++s) {
      if (!plan.folded[s]) continue;
      for (int v : exe_.steps_[s].outputs) {
        if (v < 0 || root[static_cast<std::size_t>(v)] != v) continue;
        const auto u = static_cast<std::size_t>(v);
        plan.folded_root_value[u] = true;
        placed.emplace_back(u, bytes);
        bytes += align_up(std::max<std::size_t>(plan.known[u]->size_bytes(), 1));
      }
    }
    if (placed.empty()) return Status::ok();
    VOXRT_CUDA_TRY(cudaMalloc(&plan.folded_device, bytes));
    for (auto [v, offset] : placed) {
      char* at = static_cast<char*>(plan.folded_device) + offset;
      VOXRT_CUDA_TRY(cudaMemcpy(at, plan.known[v]->raw_data(), plan.known[v]->size_bytes(),
                                cudaMemcpyHostToDevice));
      plan.values[v].data = at;
    }
    return Status::ok();
  }

  void fill_step(ShapePlan& plan, std::size_t s) {
    const auto& step = exe_.steps_[s];
    auto tensor = [&](int v) {
      if (v < 0) return DevTensor{};
      DevTensor t = plan.values[static_cast<std::size_t>(v)];
      t.host = plan.known[static_cast<std::size_t>(v)];
      return t;
    };
    plan.step_in[s].clear();
    plan.step_out[s].clear();
    for (int v : step.inputs) plan.step_in[s].push_back(tensor(v));
    for (int v : step.outputs) plan.step_out[s].push_back(tensor(v));
  }

  // Makes room for `plan`; growing any buffer re-points every plan and drops their graphs.
  Status fit(ShapePlan& plan) {
    // A run enqueued on the caller's stream may still use the buffers about to be replaced.
    VOXRT_RETURN_IF_ERROR(finish_enqueued());
    bool grew = false;
    if (plan.arena_bytes > arena_bytes_) {
      if (arena_) VOXRT_CUDA_TRY(cudaFree(arena_));
      arena_ = nullptr;
      VOXRT_CUDA_TRY(cudaMalloc(&arena_, plan.arena_bytes));
      if (poison_) VOXRT_CUDA_TRY(cudaMemset(arena_, 0xFF, plan.arena_bytes));
      arena_bytes_ = plan.arena_bytes;
      grew = true;
    }
    if (plan.scratch_bytes > scratch_bytes_) {
      if (scratch_) VOXRT_CUDA_TRY(cudaFree(scratch_));
      scratch_ = nullptr;
      VOXRT_CUDA_TRY(cudaMalloc(&scratch_, plan.scratch_bytes));
      if (poison_) VOXRT_CUDA_TRY(cudaMemset(scratch_, 0xFF, plan.scratch_bytes));
      scratch_bytes_ = plan.scratch_bytes;
      grew = true;
    }
    if (plan.pinned_bytes > pinned_bytes_) {
      if (pinned_) VOXRT_CUDA_TRY(cudaFreeHost(pinned_));
      pinned_ = nullptr;
      void* p = nullptr;
      VOXRT_CUDA_TRY(cudaMallocHost(&p, plan.pinned_bytes));
      pinned_ = static_cast<char*>(p);
      pinned_bytes_ = plan.pinned_bytes;
      grew = true;
    }
    for (auto& [key, p] : plans_) {
      if (grew || p.get() == &plan) resolve(*p);
    }
    return Status::ok();
  }

  void resolve(ShapePlan& plan) {
    plan.drop_graph();
    for (std::size_t v = 0; v < plan.values.size(); ++v) {
      if (plan.arena_offset[v] >= 0)
        plan.values[v].data = static_cast<char*>(arena_) + plan.arena_offset[v];
    }
    for (std::size_t s = 0; s < exe_.steps_.size(); ++s) {
      if (!exe_.steps_[s].view) fill_step(plan, s);
    }
  }

  void stage_inputs(const ShapePlan& plan, std::span<const Tensor> inputs) {
    for (std::size_t i = 0; i < inputs.size(); ++i)
      std::memcpy(pinned_ + plan.input_pinned[i], inputs[i].raw_data(), inputs[i].size_bytes());
  }

  CudaRunContext context() const {
    return CudaRunContext{caller_stream_ ? caller_stream_ : stream_, lt_, lt_workspace_,
                          kLtWorkspaceBytes, scratch_};
  }

  Status enqueue_step(const ShapePlan& plan, std::size_t s) {
    return plan.calls[s]
        ->enqueue(plan.step_in[s], plan.step_out[s], context())
        .with_context(exe_.steps_[s].node->describe());
  }

  // The host<->device transfers of one direction: one memcpy each, or, when they are small
  // enough in all, copy_spans kernels that read or write the pinned buffer directly.
  class Transfers {
   public:
    Transfers(bool zero_copy, cudaMemcpyKind kind, cudaStream_t stream)
        : zero_copy_(zero_copy), kind_(kind), stream_(stream) {}
    void add(void* dst, const void* src, std::size_t bytes) {
      if (bytes) pending_.push_back({dst, src, bytes});
    }
    Status flush(std::size_t max_zero_copy_bytes) {
      std::size_t total = 0;
      for (const auto& p : pending_) total += p.bytes;
      if (!zero_copy_ || total > max_zero_copy_bytes) {
        for (const auto& p : pending_)
          VOXRT_CUDA_TRY(cudaMemcpyAsync(p.dst, p.src, p.bytes, kind_, stream_));
      } else {
        ops::CopySpans spans;
        for (std::size_t i = 0; i < pending_.size(); ++i) {
          spans.src[spans.count] = pending_[i].src;
          spans.dst[spans.count] = pending_[i].dst;
          spans.bytes[spans.count] = static_cast<std::int64_t>(pending_[i].bytes);
          if (++spans.count == ops::kMaxCopySpans || i + 1 == pending_.size()) {
            VOXRT_CUDA_TRY(ops::copy_spans(spans, stream_));
            spans.count = 0;
          }
        }
      }
      pending_.clear();
      return Status::ok();
    }

   private:
    struct Pending {
      void* dst;
      const void* src;
      std::size_t bytes;
    };
    bool zero_copy_;
    cudaMemcpyKind kind_;
    cudaStream_t stream_;
    std::vector<Pending> pending_;
  };

  Status enqueue_all(const ShapePlan& plan) {
    Transfers inputs(zero_copy_enabled_, cudaMemcpyHostToDevice, stream_);
    if (plan.slots_mode) {
      inputs.add(slot_ids_, pinned_ + plan.slots_pinned,
                 static_cast<std::size_t>(plan.batch) * sizeof(int));
    }
    for (std::size_t i = 0; i < exe_.input_ids_.size(); ++i) {
      const DevTensor& v = plan.values[static_cast<std::size_t>(exe_.input_ids_[i])];
      if (!(plan.slots_mode && state_for_input(i)))
        inputs.add(v.data, pinned_ + plan.input_pinned[i], v.bytes());
    }
    VOXRT_RETURN_IF_ERROR(inputs.flush(kZeroCopyMaxBytes));
    for (std::size_t i = 0; i < exe_.input_ids_.size(); ++i) {
      const DevTensor& v = plan.values[static_cast<std::size_t>(exe_.input_ids_[i])];
      const PoolState* st = plan.slots_mode ? state_for_input(i) : nullptr;
      if (st) {
        VOXRT_CUDA_TRY(ops::slot_gather(st->storage, slot_ids_, v.data, plan.batch, st->outer,
                                        st->row_bytes, stream_));
      }
    }
    for (std::size_t s = 0; s < exe_.steps_.size(); ++s) {
      if (plan.calls[s]) VOXRT_RETURN_IF_ERROR(enqueue_step(plan, s));
    }
    Transfers outputs(zero_copy_enabled_, cudaMemcpyDeviceToHost, stream_);
    for (std::size_t i = 0; i < exe_.output_ids_.size(); ++i) {
      const DevTensor& v = plan.values[static_cast<std::size_t>(exe_.output_ids_[i])];
      const PoolState* st = plan.slots_mode ? state_for_output(i) : nullptr;
      if (st) {
        VOXRT_CUDA_TRY(ops::slot_scatter(v.data, slot_ids_, st->storage, plan.batch, st->outer,
                                         st->row_bytes, stream_));
        continue;
      }
      outputs.add(pinned_ + plan.output_pinned[i], v.data, v.bytes());
    }
    return outputs.flush(kZeroCopyMaxBytes);
  }

  // Steps [first, last) (those with a call) as one instantiated graph, or null when they cannot
  // be captured. Captured on the session's own stream; the graph may be launched on any.
  cudaGraphExec_t capture_steps(const ShapePlan& plan, std::size_t first, std::size_t last) {
    if (cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    Status enqueued = Status::ok();
    for (std::size_t s = first; s < last && enqueued.is_ok(); ++s)
      if (plan.calls[s]) enqueued = enqueue_step(plan, s);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    cudaGraphExec_t exec = nullptr;
    if (enqueued.is_ok() && ended == cudaSuccess && graph &&
        cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess)
      exec = nullptr;
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    return exec;
  }

  // Records the whole run into a CUDA graph; on any failure the plan runs eagerly from then on.
  Status capture(ShapePlan& plan) {
    VOXRT_CUDA_TRY(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const Status enqueued = enqueue_all(plan);
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream_, &graph);
    if (!enqueued.is_ok() || ended != cudaSuccess || !graph) {
      if (graph) cudaGraphDestroy(graph);
      cudaGetLastError();
      plan.graph_failed = true;
      warn_graph_failed(!enqueued.is_ok()
                            ? enqueued.message()
                            : str_cat("cudaStreamEndCapture: ", cudaGetErrorString(ended)));
      return Status::ok();
    }
    const cudaError_t made = cudaGraphInstantiate(&plan.graph, graph, 0);
    cudaGraphDestroy(graph);
    if (made != cudaSuccess) {
      cudaGetLastError();
      plan.graph = nullptr;
      plan.graph_failed = true;
      warn_graph_failed(str_cat("cudaGraphInstantiate: ", cudaGetErrorString(made)));
    }
    return Status::ok();
  }

  // Once per session: the run is still right, only slower and with more jitter, so it is a
  // warning on stderr rather than an error.
  void warn_graph_failed(const std::string& why) {
    if (graph_warning_given_) return;
    graph_warning_given_ = true;
    std::fprintf(stderr, "[voxrt] warning: CUDA graph capture failed (%s); such runs go eagerly\n",
                 why.c_str());
  }

  const CudaExecutable& exe_;
  bool graphs_enabled_ = true;
  bool step_graph_timing_ = false;  // run_profiled: each step as its own replayed graph
  // Inputs and outputs of at most kZeroCopyMaxBytes per direction move by one copy_spans kernel
  // instead of one memcpy each (VOXRT_CUDA_ZERO_COPY=0: always memcpy).
  bool zero_copy_enabled_ = true;
  static constexpr std::size_t kZeroCopyMaxBytes = 64u << 10;
  bool graph_warning_given_ = false;
  bool poison_ = false;
  cudaStream_t stream_ = nullptr;
  cublasLtHandle_t lt_ = nullptr;
  void* lt_workspace_ = nullptr;
  void* arena_ = nullptr;
  std::size_t arena_bytes_ = 0;
  void* scratch_ = nullptr;
  std::size_t scratch_bytes_ = 0;
  char* pinned_ = nullptr;
  std::size_t pinned_bytes_ = 0;
  std::map<std::vector<std::int64_t>, std::unique_ptr<ShapePlan>> plans_;
  // Per graph input: its values decide output shapes (found by make_plan), so plans are keyed by
  // them too. A Reshape whose target shape is a graph input is the usual case.
  std::vector<bool> shape_operand_inputs_;
  int last_profile_ = 0;
  // enqueue(): the caller's stream while its steps are enqueued eagerly (null: stream_), and an
  // event recorded after its last run, which every later use of the session's buffers waits for.
  cudaStream_t caller_stream_ = nullptr;
  cudaEvent_t enqueued_ = nullptr;
  bool enqueue_pending_ = false;
  // Larger integer inputs are data (token ids, lengths), never read on the host for shapes.
  static constexpr std::int64_t kMaxShapeOperandElements = 16;
  std::vector<PoolState> pool_;
  int* slot_ids_ = nullptr;  // device, capacity entries
  int capacity_ = 0;
};

Expected<std::unique_ptr<DeviceSession>> CudaExecutable::create_session() const {
  auto session = std::make_unique<CudaSession>(*this);
  VOXRT_RETURN_IF_ERROR(session->init());
  return std::unique_ptr<DeviceSession>(std::move(session));
}

}  // namespace

Expected<std::unique_ptr<DeviceExecutable>> compile_graph(const ir::Graph& graph,
                                                          Precision precision,
                                                          std::vector<OptimizationProfile> profiles,
                                                          bool stack_recurrent) {
  auto exe =
      std::make_unique<CudaExecutable>(graph, precision, std::move(profiles), stack_recurrent);
  VOXRT_RETURN_IF_ERROR(exe->init());
  return std::unique_ptr<DeviceExecutable>(std::move(exe));
}

}  // namespace voxrt::backends::cuda
