// Gives the free memory glibc's malloc keeps in its arenas back to the system when it exceeds a
// bound. Measured cause (docs/perf/server.md, "the RSS step"): under load the compute worker's
// arena grew to ~69 MB at a peak and then held 51.6 MB of it free in 1,727 chunks between
// long-lived ones, so glibc could not shrink it (it only trims the top of a heap); resident
// memory stayed 64 MiB above its level for the rest of the hour. malloc_trim(0) also releases
// the whole pages inside free chunks (madvise), which is what this calls.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <thread>

namespace voxrt::server {

class ServerMetrics;

class MallocTrimmer {
 public:
  // Every `period`, trims if malloc holds more than `free_bytes_bound` free bytes. A bound of 0
  // starts no thread (trimming off). On a C library other than glibc it does nothing.
  MallocTrimmer(std::size_t free_bytes_bound, std::chrono::milliseconds period,
                std::shared_ptr<ServerMetrics> metrics);
  ~MallocTrimmer();
  MallocTrimmer(const MallocTrimmer&) = delete;
  MallocTrimmer& operator=(const MallocTrimmer&) = delete;

  // One check now, on the calling thread; true if it trimmed. What the thread does each period.
  bool check_once();

 private:
  const std::size_t free_bytes_bound_;
  const std::chrono::milliseconds period_;
  std::shared_ptr<ServerMetrics> metrics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace voxrt::server
