// Streaming state kept by the runtime: each stream owns a slot; one call runs a batch for a
// list of slots, gathering their states into the batch and scattering the new states back.
// acquire and release are O(1); a fresh slot's states are zeros. A stream's outputs do not
// depend on which other slots share its batch (every kernel treats batch rows independently).
//
// CPU engines keep the states in host memory. Device (CUDA) engines keep them on the device, in
// the slot pool of the first ExecutionContext that runs a batch (the pool is bound to it; the
// states never travel to the host), and round each batch up to a bucket (1, 2, 3, 4, 6, 8, 12,
// ... up to the profile's largest batch, none below its smallest) with padding rows on spare
// slots, so a server whose batch size changes every call reuses a handful of CUDA graphs
// instead of capturing one per size. VOXRT_DEVICE_STATE_POOL=0 keeps device engines' states on
// the host (for comparison).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "voxrt/engine.h"

namespace voxrt {

class StatePool {
 public:
  // Needs the engine's state pairs (voxrt build --state) with batch-first state inputs whose
  // other dims are static.
  static Expected<std::unique_ptr<StatePool>> create(std::shared_ptr<const Engine> engine,
                                                     int capacity);

  Expected<int> acquire();
  Status release(int slot);
  // Zeroes an acquired slot's states, as a fresh slot's (a stream starting a new utterance).
  Status reset(int slot);
  int capacity() const { return capacity_; }
  int in_use() const;

  // The engine inputs that are not states, in engine order (what run_batch takes).
  const std::vector<TensorInfo>& stream_inputs() const { return stream_inputs_; }
  // The engine outputs that are not states, in engine order (what run_batch returns).
  const std::vector<TensorInfo>& stream_outputs() const { return stream_outputs_; }

  // `inputs` are the non-state inputs with batch dim 0 == slots.size(); slots must be distinct
  // and acquired. Returns the non-state outputs; states of the slots are updated in place.
  Expected<std::vector<Tensor>> run_batch(ExecutionContext& context, std::span<const int> slots,
                                          std::span<const Tensor> inputs);

  // Device pools: runs every batch bucket up to the one `max_batch` pads to, largest first (so
  // the device arena is sized once), twice each (the second run captures the bucket's CUDA
  // graph), on the padding slots, so no stream's state is touched. Without it a server's first
  // batch of each new size stalls every stream for a plan, cuDNN/cuBLASLt setup and a capture
  // (100-200 ms seen on the H200). `one_row_inputs`: stream_inputs() with batch 1 at the shape
  // the server will run (their values do not matter). Host pools: nothing to do.
  Status warm_up(ExecutionContext& context, std::span<const Tensor> one_row_inputs,
                 std::int64_t max_batch);

  // A copy of one slot's state `index` (for tests and checkpointing).
  Expected<Tensor> read_state(int slot, std::size_t index) const;

  // Whether the states live on the device, and the batch a run of `batch` slots is padded to.
  bool states_on_device() const { return on_device_; }
  std::int64_t padded_batch(std::int64_t batch) const;

 private:
  Expected<std::vector<Tensor>> run_on_host(ExecutionContext& context, std::span<const int> slots,
                                            std::span<const Tensor> inputs);
  Expected<std::vector<Tensor>> run_on_device(ExecutionContext& context, std::span<const int> slots,
                                              std::span<const Tensor> inputs);
  // Zeroes the slot's states (host) or marks them for zeroing before the next run (device);
  // the caller holds mutex_.
  void zero_slot(int slot);
  // Creates the device slot pool in `context`'s session on first use; refuses another context.
  Status bind_device_context(ExecutionContext& context);

  struct State {
    std::size_t input_index = 0;
    std::size_t output_index = 0;
    Dims row_dims;  // per-stream dims (batch dim removed)
    std::size_t row_bytes = 0;
    Tensor storage;  // [capacity, row_dims...]; host states only
  };

  std::shared_ptr<const Engine> engine_;
  int capacity_ = 0;
  std::vector<State> states_;
  std::vector<std::size_t> stream_input_indices_;
  std::vector<std::size_t> stream_output_indices_;
  std::vector<TensorInfo> stream_inputs_;
  std::vector<TensorInfo> stream_outputs_;
  mutable std::mutex mutex_;
  std::vector<int> free_slots_;
  std::vector<bool> acquired_;
  // Device states: acquired since their last run, so zeroed on the device before the next.
  std::vector<bool> fresh_;
  bool on_device_ = false;
  ExecutionContext* device_context_ = nullptr;  // the context whose session holds the pool
  std::vector<std::int64_t> batch_buckets_;     // ascending; padding slots follow `capacity_`
};

}  // namespace voxrt
