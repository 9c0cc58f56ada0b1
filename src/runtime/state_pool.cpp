#include "runtime/state_pool.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "runtime/engine_impl.h"

namespace voxrt {
namespace {

// 1, 2, 3, 4, 6, 8, 12, 16, ...: at most a third of a padded batch is padding. Capped by the
// largest batch the engine's profiles allow for the stream inputs (always included); empty when
// no profile bounds the batch (no padding then). Only batches some profile admits are buckets,
// and each profile's smallest batch is one: an engine built for batch 256 alone (min = max, so
// its shapes are static) has the single bucket 256, where a bucket 192 could never run.
std::vector<std::int64_t> batch_buckets(const Engine& engine,
                                        const std::vector<TensorInfo>& stream_inputs) {
  std::vector<std::pair<std::int64_t, std::int64_t>> batch_ranges;  // [min, max] per profile
  std::int64_t max_batch = 0;
  for (const auto& profile : engine.impl().contents.profiles) {
    std::int64_t lo = 1, hi = -1;
    for (const auto& input : stream_inputs) {
      auto it = profile.inputs.find(input.name);
      if (it == profile.inputs.end() || it->second.max.empty()) continue;
      lo = std::max(lo, it->second.min[0]);
      hi = hi < 0 ? it->second.max[0] : std::min(hi, it->second.max[0]);
    }
    if (hi < lo) continue;
    batch_ranges.emplace_back(lo, hi);
    max_batch = std::max(max_batch, hi);
  }
  std::vector<std::int64_t> buckets;
  if (max_batch < 1) return buckets;
  std::vector<std::int64_t> candidates;
  for (std::int64_t power = 1; power < max_batch; power *= 2) {
    candidates.push_back(power);
    if (power >= 2 && power + power / 2 < max_batch) candidates.push_back(power + power / 2);
  }
  candidates.push_back(max_batch);
  for (const auto& range : batch_ranges) candidates.push_back(range.first);
  for (std::int64_t batch : candidates) {
    const bool admitted = std::any_of(batch_ranges.begin(), batch_ranges.end(), [&](const auto& r) {
      return r.first <= batch && batch <= r.second;
    });
    if (admitted) buckets.push_back(batch);
  }
  std::sort(buckets.begin(), buckets.end());
  buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
  return buckets;
}

// Rows [0, rows) of a batch-first tensor, or the tensor padded with zero rows to `rows`.
Tensor with_rows(const Tensor& t, std::int64_t rows) {
  Dims dims = t.dims();
  const std::size_t row_bytes = t.size_bytes() / static_cast<std::size_t>(dims[0]);
  const std::int64_t kept = std::min(rows, dims[0]);
  dims[0] = rows;
  Tensor out = Tensor::zeros(t.dtype(), dims);
  std::memcpy(out.raw_data(), t.raw_data(), row_bytes * static_cast<std::size_t>(kept));
  return out;
}

}  // namespace

Expected<std::unique_ptr<StatePool>> StatePool::create(std::shared_ptr<const Engine> engine,
                                                       int capacity) {
  if (capacity < 1 || capacity > (1 << 20))
    return invalid_argument("StatePool: capacity must be 1..2^20, got ", capacity);
  auto pool = std::unique_ptr<StatePool>(new StatePool());
  pool->engine_ = engine;
  pool->capacity_ = capacity;
  const char* device_pool = std::getenv("VOXRT_DEVICE_STATE_POOL");
  pool->on_device_ = engine->impl().device_executable != nullptr &&
                     !(device_pool && std::string_view(device_pool) == "0");
  const auto& pairs = engine->impl().contents.states;
  if (pairs.empty())
    return failed_precondition(
        "StatePool: the engine has no state pairs (build it with --state IN:OUT)");
  std::vector<bool> input_is_state(engine->inputs().size(), false),
      output_is_state(engine->outputs().size(), false);
  for (const auto& pair : pairs) {
    State s;
    bool found_in = false, found_out = false;
    for (std::size_t i = 0; i < engine->inputs().size(); ++i) {
      if (engine->inputs()[i].name == pair.input) {
        s.input_index = i;
        found_in = true;
      }
    }
    for (std::size_t i = 0; i < engine->outputs().size(); ++i) {
      if (engine->outputs()[i].name == pair.output) {
        s.output_index = i;
        found_out = true;
      }
    }
    if (!found_in || !found_out)
      return corrupt("StatePool: state pair ", pair.input, ":", pair.output,
                     " names no engine tensor");
    const TensorInfo& info = engine->inputs()[s.input_index];
    if (info.dims.empty())
      return invalid_argument("StatePool: state '", info.name,
                              "' is a scalar; states must be batch-first");
    for (std::size_t d = 1; d < info.dims.size(); ++d) {
      if (info.dims[d] < 0) {
        return invalid_argument("StatePool: state '", info.name, "' dim ", d,
                                " is dynamic; every dim but the batch (dim 0) must be static");
      }
      s.row_dims.push_back(info.dims[d]);
    }
    s.row_bytes =
        static_cast<std::size_t>(element_count(s.row_dims)) * dtype_size_bytes(info.dtype);
    Dims storage_dims = s.row_dims;
    storage_dims.insert(storage_dims.begin(), capacity);
    if (!pool->on_device_) s.storage = Tensor::zeros(info.dtype, storage_dims);
    input_is_state[s.input_index] = true;
    output_is_state[s.output_index] = true;
    pool->states_.push_back(std::move(s));
  }
  for (std::size_t i = 0; i < input_is_state.size(); ++i) {
    if (!input_is_state[i]) {
      pool->stream_input_indices_.push_back(i);
      pool->stream_inputs_.push_back(engine->inputs()[i]);
    }
  }
  for (std::size_t i = 0; i < output_is_state.size(); ++i) {
    if (!output_is_state[i]) {
      pool->stream_output_indices_.push_back(i);
      pool->stream_outputs_.push_back(engine->outputs()[i]);
    }
  }
  // A static dim 0 must be the batch the stream inputs carry: a [layers, batch, hidden] state
  // of a fixed-shape engine would otherwise pass for batch-first.
  for (const State& st : pool->states_) {
    const TensorInfo& state = engine->inputs()[st.input_index];
    for (const TensorInfo& stream : pool->stream_inputs_) {
      if (state.dims[0] >= 0 && !stream.dims.empty() && stream.dims[0] >= 0 &&
          state.dims[0] != stream.dims[0]) {
        return invalid_argument("StatePool: state '", state.name, "' is ",
                                dims_to_string(state.dims), ": its dim 0 is not the batch (",
                                stream.dims[0], ", dim 0 of '", stream.name,
                                "'); states must be batch-first, [batch, ...]");
      }
    }
  }
  if (pool->on_device_) pool->batch_buckets_ = batch_buckets(*engine, pool->stream_inputs_);
  pool->acquired_.assign(static_cast<std::size_t>(capacity), false);
  pool->fresh_.assign(static_cast<std::size_t>(capacity), false);
  pool->free_slots_.reserve(static_cast<std::size_t>(capacity));
  for (int slot = capacity - 1; slot >= 0; --slot) pool->free_slots_.push_back(slot);
  return pool;
}

Expected<int> StatePool::acquire() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (free_slots_.empty())
    return resource_exhausted("StatePool: all ", capacity_, " slots are in use");
  const int slot = free_slots_.back();
  free_slots_.pop_back();
  acquired_[static_cast<std::size_t>(slot)] = true;
  zero_slot(slot);
  return slot;
}

Status StatePool::reset(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot < 0 || slot >= capacity_ || !acquired_[static_cast<std::size_t>(slot)]) {
    return invalid_argument("StatePool: slot ", slot, " is not acquired");
  }
  zero_slot(slot);
  return Status::ok();
}

void StatePool::zero_slot(int slot) {
  if (on_device_) {
    // Zeroed on the device before the slot's next run.
    fresh_[static_cast<std::size_t>(slot)] = true;
    return;
  }
  for (State& s : states_)
    std::memset(
        static_cast<char*>(s.storage.raw_data()) + s.row_bytes * static_cast<std::size_t>(slot), 0,
        s.row_bytes);
}

Status StatePool::release(int slot) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (slot < 0 || slot >= capacity_ || !acquired_[static_cast<std::size_t>(slot)]) {
    return invalid_argument("StatePool: slot ", slot, " is not acquired");
  }
  acquired_[static_cast<std::size_t>(slot)] = false;
  free_slots_.push_back(slot);
  return Status::ok();
}

int StatePool::in_use() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return capacity_ - static_cast<int>(free_slots_.size());
}

Expected<std::vector<Tensor>> StatePool::run_batch(ExecutionContext& context,
                                                   std::span<const int> slots,
                                                   std::span<const Tensor> inputs) {
  const auto batch = static_cast<std::int64_t>(slots.size());
  if (batch == 0) return invalid_argument("StatePool::run_batch: no slots");
  if (inputs.size() != stream_input_indices_.size()) {
    return invalid_argument("StatePool::run_batch: expected ", stream_input_indices_.size(),
                            " non-state inputs, got ", inputs.size());
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<bool> seen(static_cast<std::size_t>(capacity_), false);
    for (int slot : slots) {
      if (slot < 0 || slot >= capacity_ || !acquired_[static_cast<std::size_t>(slot)]) {
        return invalid_argument("StatePool::run_batch: slot ", slot, " is not acquired");
      }
      if (seen[static_cast<std::size_t>(slot)])
        return invalid_argument("StatePool::run_batch: slot ", slot, " appears twice");
      seen[static_cast<std::size_t>(slot)] = true;
    }
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].rank() == 0 || inputs[i].dim(0) != batch) {
      return invalid_argument("StatePool::run_batch: input '", stream_inputs_[i].name,
                              "' must have batch dim 0 = ", batch, ", got ",
                              dims_to_string(inputs[i].dims()));
    }
  }
  return on_device_ ? run_on_device(context, slots, inputs) : run_on_host(context, slots, inputs);
}

Expected<std::vector<Tensor>> StatePool::run_on_host(ExecutionContext& context,
                                                     std::span<const int> slots,
                                                     std::span<const Tensor> inputs) {
  const auto batch = static_cast<std::int64_t>(slots.size());
  std::vector<Tensor> all_inputs(engine_->inputs().size());
  for (std::size_t i = 0; i < inputs.size(); ++i) all_inputs[stream_input_indices_[i]] = inputs[i];
  for (const State& s : states_) {
    Dims dims = s.row_dims;
    dims.insert(dims.begin(), batch);
    Tensor gathered = Tensor::uninitialized(s.storage.dtype(), dims);
    for (std::int64_t b = 0; b < batch; ++b) {
      std::memcpy(
          static_cast<char*>(gathered.raw_data()) + s.row_bytes * static_cast<std::size_t>(b),
          static_cast<const char*>(s.storage.raw_data()) +
              s.row_bytes * static_cast<std::size_t>(slots[static_cast<std::size_t>(b)]),
          s.row_bytes);
    }
    all_inputs[s.input_index] = std::move(gathered);
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context.run(all_inputs));
  for (State& s : states_) {
    const Tensor& next = outputs[s.output_index];
    if (next.size_bytes() != s.row_bytes * static_cast<std::size_t>(batch)) {
      return internal_error("StatePool: state output '", engine_->outputs()[s.output_index].name,
                            "' is ", dims_to_string(next.dims()), ", expected ", batch, " rows of ",
                            dims_to_string(s.row_dims));
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      std::memcpy(
          static_cast<char*>(s.storage.raw_data()) +
              s.row_bytes * static_cast<std::size_t>(slots[static_cast<std::size_t>(b)]),
          static_cast<const char*>(next.raw_data()) + s.row_bytes * static_cast<std::size_t>(b),
          s.row_bytes);
    }
  }
  std::vector<Tensor> stream_outputs;
  for (std::size_t i : stream_output_indices_) stream_outputs.push_back(std::move(outputs[i]));
  return stream_outputs;
}

std::int64_t StatePool::padded_batch(std::int64_t batch) const {
  for (std::int64_t bucket : batch_buckets_)
    if (bucket >= batch) return bucket;
  return batch;  // beyond the profile (the run reports it) or no buckets
}

Status StatePool::bind_device_context(ExecutionContext& context) {
  if (!device_context_) {
    std::vector<backends::DeviceStateSpec> specs;
    for (const State& s : states_) {
      specs.push_back(
          {engine_->inputs()[s.input_index].name, engine_->outputs()[s.output_index].name, 0});
    }
    // Spare slots after the streams' ones hold the padding rows' (unused) states.
    const std::int64_t spare = batch_buckets_.empty() ? 0 : batch_buckets_.back();
    VOXRT_RETURN_IF_ERROR(
        context.impl().create_device_state_pool(specs, capacity_ + static_cast<int>(spare)));
    device_context_ = &context;
  } else if (device_context_ != &context) {
    return failed_precondition(
        "StatePool: this pool's states live in another ExecutionContext's device session; run "
        "every batch of a pool on the same context");
  }
  return Status::ok();
}

Status StatePool::warm_up(ExecutionContext& context, std::span<const Tensor> one_row_inputs,
                          std::int64_t max_batch) {
  if (!on_device_) return Status::ok();
  if (one_row_inputs.size() != stream_inputs_.size()) {
    return invalid_argument("StatePool::warm_up: expected ", stream_inputs_.size(),
                            " inputs (the non-state ones), found ", one_row_inputs.size());
  }
  VOXRT_RETURN_IF_ERROR(bind_device_context(context));
  const std::int64_t top = padded_batch(max_batch);
  for (auto it = batch_buckets_.rbegin(); it != batch_buckets_.rend(); ++it) {
    const std::int64_t bucket = *it;
    if (bucket > top) continue;
    std::vector<int> slots;
    for (std::int64_t b = 0; b < bucket; ++b) slots.push_back(capacity_ + static_cast<int>(b));
    std::vector<Tensor> inputs;
    for (const Tensor& t : one_row_inputs) inputs.push_back(with_rows(t, bucket));
    for (int run = 0; run < 2; ++run) {
      std::vector<Tensor> outputs;
      Status ran = context.impl().run_device_slots(inputs, slots, outputs);
      if (!ran) return ran.with_context(str_cat("warming up batch ", bucket));
    }
  }
  return Status::ok();
}

Expected<std::vector<Tensor>> StatePool::run_on_device(ExecutionContext& context,
                                                       std::span<const int> slots,
                                                       std::span<const Tensor> inputs) {
  const auto batch = static_cast<std::int64_t>(slots.size());
  const std::int64_t padded = padded_batch(batch);
  VOXRT_RETURN_IF_ERROR(bind_device_context(context));
  std::vector<int> fresh;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int slot : slots) {
      if (fresh_[static_cast<std::size_t>(slot)]) {
        fresh_[static_cast<std::size_t>(slot)] = false;
        fresh.push_back(slot);
      }
    }
  }
  for (int slot : fresh) VOXRT_RETURN_IF_ERROR(context.impl().reset_device_slot(slot));
  std::vector<int> run_slots(slots.begin(), slots.end());
  std::vector<Tensor> run_inputs(inputs.begin(), inputs.end());
  if (padded > batch) {
    for (std::int64_t b = batch; b < padded; ++b)
      run_slots.push_back(capacity_ + static_cast<int>(b - batch));
    for (Tensor& t : run_inputs) t = with_rows(t, padded);
  }
  std::vector<Tensor> outputs;
  VOXRT_RETURN_IF_ERROR(context.impl().run_device_slots(run_inputs, run_slots, outputs));
  if (padded > batch) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].rank() == 0 || outputs[i].dim(0) != padded) {
        return internal_error("StatePool: output '", stream_outputs_[i].name, "' is ",
                              dims_to_string(outputs[i].dims()),
                              ", expected batch dim 0 = ", padded);
      }
      outputs[i] = with_rows(outputs[i], batch);
    }
  }
  return outputs;
}

Expected<Tensor> StatePool::read_state(int slot, std::size_t index) const {
  if (index >= states_.size()) return out_of_range("StatePool::read_state: no state ", index);
  if (slot < 0 || slot >= capacity_) return out_of_range("StatePool::read_state: no slot ", slot);
  const State& s = states_[index];
  const DType dtype = engine_->inputs()[s.input_index].dtype;
  if (on_device_) {
    bool fresh = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      fresh = fresh_[static_cast<std::size_t>(slot)];
    }
    if (!device_context_ || fresh) return Tensor::zeros(dtype, s.row_dims);
    VOXRT_ASSIGN_OR_RETURN(Tensor t, device_context_->impl().read_device_slot_state(slot, index));
    return t.reshaped(s.row_dims);
  }
  Tensor t = Tensor::uninitialized(s.storage.dtype(), s.row_dims);
  std::memcpy(
      t.raw_data(),
      static_cast<const char*>(s.storage.raw_data()) + s.row_bytes * static_cast<std::size_t>(slot),
      s.row_bytes);
  return t;
}

}  // namespace voxrt
