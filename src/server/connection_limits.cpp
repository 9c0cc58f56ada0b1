#include "server/connection_limits.h"

#include <sys/resource.h>

#include <algorithm>

namespace voxrt::server {

ConnectionLimits::ConnectionLimits(int max_total, int max_per_address,
                                   std::shared_ptr<ServerMetrics> metrics)
    : max_total_(max_total), max_per_address_(max_per_address), metrics_(std::move(metrics)) {
  metrics_->tcp_connections_capacity.Set(max_total_);
}

ConnectionLimits::Ticket::~Ticket() {
  limits_.release(address_, per_address_);
}

ConnectionLimits::Decision ConnectionLimits::admit(const std::string& address) {
  std::lock_guard lock(mutex_);
  Decision decision;
  if (open_ >= max_total_) {
    decision.admission = Admission::kTooManyInAll;
    return decision;
  }
  ++open_;
  metrics_->tcp_connections.Increment();
  int& from_address = per_address_[address];
  if (from_address >= max_per_address_) {
    if (from_address == 0) per_address_.erase(address);
    decision.admission = Admission::kTooManyFromAddress;
    decision.ticket = std::shared_ptr<Ticket>(new Ticket(*this, address, false));
    return decision;
  }
  ++from_address;
  decision.ticket = std::shared_ptr<Ticket>(new Ticket(*this, address, true));
  return decision;
}

int ConnectionLimits::open() const {
  std::lock_guard lock(mutex_);
  return open_;
}

void ConnectionLimits::release(const std::string& address, bool per_address) {
  std::lock_guard lock(mutex_);
  --open_;
  metrics_->tcp_connections.Decrement();
  if (!per_address) return;
  auto it = per_address_.find(address);
  if (it != per_address_.end() && --it->second <= 0) per_address_.erase(it);
}

int effective_max_connections(int configured) {
  if (configured > 0) return configured;
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) return 1024 - kReservedDescriptors;
  if (limit.rlim_cur < limit.rlim_max) {
    rlimit raised = limit;
    raised.rlim_cur = limit.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) limit = raised;
  }
  // rlim_cur may be RLIM_INFINITY (a huge number): connections beyond a million are not ours
  // to plan for.
  const rlim_t soft = std::min<rlim_t>(limit.rlim_cur, 1 << 20);
  return std::max(16, static_cast<int>(soft) - kReservedDescriptors);
}

}  // namespace voxrt::server
