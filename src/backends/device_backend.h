// A device backend (CUDA): the whole graph runs on one device, planned at load. The core
// libraries only see this interface; the CUDA library implements it and the program that links
// it registers it explicitly at start-up (register_cuda_backend(); STYLE.md 6: no static
// self-registration). With nothing registered, building or loading a device engine fails with a
// message saying so.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/kernel.h"
#include "backends/layer_precision.h"
#include "ir/graph.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::backends {

// A streaming state pair kept in a session's device-resident slot pool. The state tensor is
// [outer..., batch, inner...] with the batch at `batch_axis`; other dims must be static.
struct DeviceStateSpec {
  std::string input;
  std::string output;
  int batch_axis = 0;
};

// Per ExecutionContext: its own stream, arena, pinned staging, CUDA graphs. Not thread-safe; one
// caller at a time (like ExecutionContext).
class DeviceSession {
 public:
  virtual ~DeviceSession() = default;
  // GPU-resident state slot pool: `capacity` slots of every state, zeros at first. The states of
  // a batch are gathered from the pool by slot id and scattered back on the device, inside the
  // same CUDA graph as the rest of the chunk: states never travel to the host.
  virtual Status create_state_pool(std::span<const DeviceStateSpec> states, int capacity) = 0;
  // `inputs`: the graph inputs that are not states, in graph order, batch = slots.size();
  // `outputs`: the graph outputs that are not states. Slots must be distinct and < capacity.
  virtual Status run_slots(std::span<const Tensor> inputs, std::span<const int> slots,
                           std::vector<Tensor>& outputs) = 0;
  virtual Status reset_slot(int slot) = 0;  // zeros (a new stream)
  virtual Expected<Tensor> read_slot_state(int slot, std::size_t state_index) = 0;
  // Host tensors in (graph-input order) and out (graph-output order).
  virtual Status run(std::span<const Tensor> inputs, std::vector<Tensor>& outputs) = 0;
  // Per node (execution order) median device time over `iterations` eager runs, microseconds;
  // -1 for a node whose kernel cannot be prepared or run at these shapes (the others still run).
  virtual Expected<std::vector<double>> run_profiled(std::span<const Tensor> inputs,
                                                     int iterations) = 0;
  // Device time of the computation alone, milliseconds per run: the inputs are copied in once,
  // then the steps (as one CUDA graph when graphs are on) run `iterations` times between CUDA
  // events, with no host copy or synchronisation inside the timed span. This is how PyTorch's
  // CUDA-event timing of model(x) on inputs already on the GPU measures; run() adds the copies.
  virtual Expected<std::vector<double>> time_compute(std::span<const Tensor> inputs,
                                                     int iterations) = 0;
  // ExecutionContext::enqueue: device memory in and out, on the caller's stream, no wait.
  virtual Status enqueue(std::span<const DeviceTensor> inputs,
                         std::span<const DeviceTensor> outputs, void* stream) = 0;
  virtual Expected<std::vector<Dims>> output_dims(std::span<const DeviceTensor> inputs) = 0;
  // The optimization profile whose tactics the last run (of any kind) used: the first profile
  // that admits its shapes, 0 when none does or the engine has none.
  virtual int last_profile() const = 0;
};

// Per Engine: weights on the device, one prepared kernel per node. Immutable and shared.
class DeviceExecutable {
 public:
  virtual ~DeviceExecutable() = default;
  virtual Expected<std::unique_ptr<DeviceSession>> create_session() const = 0;
  // The tactic each node runs at shapes that fit optimization profile `profile`, in execution
  // order (views report "view"). Profile 0's for an engine with one profile or none.
  virtual std::vector<std::pair<const ir::Node*, std::string>> tactics(int profile) const = 0;
};

// Where the builder keeps measured tactic times (its TimingCache, keyed by node, shapes,
// tactic and device fingerprint).
struct TacticTimingStore {
  std::function<std::optional<double>(const ir::Node&, const TacticInfo&)> find;
  std::function<void(const ir::Node&, const TacticInfo&, double)> put;
};

struct TacticSelectionStats {
  int timed = 0;
  int cache_hits = 0;
  // Candidates that could not be prepared or run at the opt shapes (they are not chosen).
  std::vector<std::string> notes;
  std::vector<TacticTiming> timings;  // every candidate's time (BuildReport::tactic_timings)
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceKind kind() const = 0;
  // Makes device `ordinal` current for the calling thread: engines loaded and sessions created on
  // this thread afterwards live on it (one server compute worker per GPU). An error names the
  // devices there are.
  virtual Status select_device(int ordinal) const = 0;
  // "cuda sm=90 driver=... runtime=... cublasLt=... name=..."; an error naming why when no
  // device can be used ("no CUDA device: ...").
  virtual Expected<std::string> fingerprint() const = 0;
  // Compares an engine's recorded fingerprint with this device; the error names every field that
  // differs.
  virtual Status check_fingerprint(const std::string& recorded) const = 0;
  // Whether `node`, once calibrated and marked int8 (builder/calibration/int8_calibration.h), runs
  // in INT8 on this backend: the builder's INT8 candidates for an int8 engine.
  virtual bool int8_candidate(const ir::Node& /*node*/) const { return false; }
  // One message per node of `graph` this backend cannot run ("node 'x' (Foo): why").
  virtual std::vector<std::string> unsupported_nodes(const ir::Graph& graph,
                                                     Precision precision) const = 0;
  // Chooses a tactic per node (writes voxrt.tactic / voxrt.tactic_name / voxrt.time_us), timing
  // candidates on the device at `opt_inputs` when `autotune`.
  virtual Status select_tactics(ir::Graph& graph, std::span<const Tensor> opt_inputs,
                                Precision precision, bool autotune, int iterations,
                                TacticTimingStore& store, TacticSelectionStats& stats) const = 0;
  // Graph-level choices, made after every node has its tactic: each candidate way of running
  // the whole graph is timed at `opt_inputs` (times kept in `store` under the node they concern,
  // so a second build reproduces the choice) and the faster one is recorded in graph.metadata
  // (CUDA: whether chains of GRU layers run as one cuDNN call, kCudaRnnStackKey).
  virtual Status tune_graph(ir::Graph& graph, std::span<const Tensor> opt_inputs,
                            Precision precision, int iterations, TacticTimingStore& store,
                            TacticSelectionStats& stats) const = 0;
  // Prepares `graph` (which must outlive the result) with its recorded tactics: per profile of
  // `profiles` (the engine's), the tactics recorded for it.
  virtual Expected<std::unique_ptr<DeviceExecutable>> compile(
      const ir::Graph& graph, Precision precision,
      std::span<const OptimizationProfile> profiles) const = 0;
};

// Engine metadata: "1" when the build timed chains of GRU layers faster as one cuDNN call.
inline constexpr const char* kCudaRnnStackKey = "voxrt.cuda_rnn_stack";

// The registered backend for `kind`, or null. Set once at start-up, before any engine is built or
// loaded; the pointer must outlive every engine.
inline DeviceBackend*& registered_device_backend_slot() {
  static DeviceBackend* backend = nullptr;
  return backend;
}
inline DeviceBackend* device_backend(DeviceKind kind) {
  DeviceBackend* backend = registered_device_backend_slot();
  return backend && backend->kind() == kind ? backend : nullptr;
}
inline void register_device_backend(DeviceBackend* backend) {
  registered_device_backend_slot() = backend;
}

}  // namespace voxrt::backends
