// Open TCP connections, counted in all and per client address and decided at accept, before a
// byte is read: a client that opens hundreds of silent connections is refused at once instead of
// holding descriptors until its requests time out (docs/security.md).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "server/server_metrics.h"

namespace voxrt::server {

class ConnectionLimits {
 public:
  ConnectionLimits(int max_total, int max_per_address, std::shared_ptr<ServerMetrics> metrics);

  enum class Admission { kAdmitted, kTooManyFromAddress, kTooManyInAll };
  // Keeps one connection counted until it is destroyed (it lives as long as the session that
  // holds it). Refused connections hold one too while their refusal is written.
  class Ticket {
   public:
    ~Ticket();
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;

   private:
    friend class ConnectionLimits;
    Ticket(ConnectionLimits& limits, std::string address, bool per_address)
        : limits_(limits), address_(std::move(address)), per_address_(per_address) {}
    ConnectionLimits& limits_;
    std::string address_;
    bool per_address_;
  };
  struct Decision {
    Admission admission = Admission::kAdmitted;
    // Null for kTooManyInAll (the connection is closed without a word).
    std::shared_ptr<Ticket> ticket;
  };
  Decision admit(const std::string& address);

  int open() const;
  int max_total() const { return max_total_; }

 private:
  void release(const std::string& address, bool per_address);

  const int max_total_;
  const int max_per_address_;
  std::shared_ptr<ServerMetrics> metrics_;
  mutable std::mutex mutex_;
  int open_ = 0;
  std::unordered_map<std::string, int> per_address_;
};

// Descriptors kept free for everything but client sockets (engine files, epoll, eventfds, logs,
// the listener's reserve descriptor).
inline constexpr int kReservedDescriptors = 64;
// --max-connections 0: raises the soft RLIMIT_NOFILE to the hard limit and returns what the
// new soft limit leaves after kReservedDescriptors (at least 16); otherwise `configured`.
int effective_max_connections(int configured);

}  // namespace voxrt::server
