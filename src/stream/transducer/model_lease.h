// What an open stream of a transducer family holds of its model until it closes: the model
// itself (kept alive while the stream is), and either a state slot of the model's pool (streaming
// encoders keep a stream's caches there) or a place in the model's count of open streams
// (offline encoders keep nothing between calls, so only max_streams needs counting).
#pragma once

#include <atomic>
#include <memory>

#include "runtime/state_pool.h"
#include "voxrt/status.h"

namespace voxrt::stream {

class ModelLease {
 public:
  // Holds `slot`, acquired from `pool` (owned by `model`); released when the lease ends.
  static ModelLease slot(std::shared_ptr<const void> model, StatePool& pool, int slot);
  // Counts one more open stream in `open_streams` (owned by `model`) until the lease ends.
  static ModelLease counted(std::shared_ptr<const void> model, std::atomic<int>& open_streams);

  ModelLease(ModelLease&& other) noexcept;
  ModelLease& operator=(ModelLease&&) = delete;
  ModelLease(const ModelLease&) = delete;
  ModelLease& operator=(const ModelLease&) = delete;
  ~ModelLease();

  // The state slot (-1 for a counted lease).
  int slot() const { return slot_; }
  // Back to a fresh stream's encoder states (zeros); a counted lease has none.
  Status reset_states();

 private:
  ModelLease(std::shared_ptr<const void> model, StatePool* pool, int slot,
             std::atomic<int>* open_streams)
      : model_(std::move(model)), pool_(pool), slot_(slot), open_streams_(open_streams) {}

  std::shared_ptr<const void> model_;
  StatePool* pool_ = nullptr;
  int slot_ = -1;
  std::atomic<int>* open_streams_ = nullptr;
};

}  // namespace voxrt::stream
