#include "stream/transducer/model_lease.h"

#include <utility>

namespace voxrt::stream {

ModelLease ModelLease::slot(std::shared_ptr<const void> model, StatePool& pool, int slot) {
  return ModelLease(std::move(model), &pool, slot, nullptr);
}

ModelLease ModelLease::counted(std::shared_ptr<const void> model, std::atomic<int>& open_streams) {
  ++open_streams;
  return ModelLease(std::move(model), nullptr, -1, &open_streams);
}

ModelLease::ModelLease(ModelLease&& other) noexcept
    : model_(std::move(other.model_)),
      pool_(std::exchange(other.pool_, nullptr)),
      slot_(std::exchange(other.slot_, -1)),
      open_streams_(std::exchange(other.open_streams_, nullptr)) {}

ModelLease::~ModelLease() {
  // Release before model_ goes: the pool and the count live in the model.
  if (pool_ != nullptr) (void)pool_->release(slot_);
  if (open_streams_ != nullptr) --*open_streams_;
}

Status ModelLease::reset_states() {
  return pool_ != nullptr ? pool_->reset(slot_) : Status::ok();
}

}  // namespace voxrt::stream
