// Streaming state kept by the runtime: each stream owns a slot; one call runs a batch for a
// list of slots, gathering their states into the batch and scattering the new states back.
// acquire and release are O(1); a fresh slot's states are zeros. A stream's outputs do not
// depend on which other slots share its batch (every kernel treats batch rows independently).
#pragma once

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

  // A copy of one slot's state `index` (for tests and checkpointing).
  Expected<Tensor> read_state(int slot, std::size_t index) const;

 private:
  struct State {
    std::size_t input_index = 0;
    std::size_t output_index = 0;
    Dims row_dims;  // per-stream dims (batch dim removed)
    std::size_t row_bytes = 0;
    Tensor storage;  // [capacity, row_dims...]
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
};

}  // namespace voxrt
