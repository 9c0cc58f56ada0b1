#include "server/malloc_trimmer.h"

#include <fstream>
#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "core/thread_name.h"
#include "server/malloc_stats.h"
#include "server/server_metrics.h"

namespace voxrt::server {
namespace {

// Resident bytes of this process (/proc/self/statm's second field, in pages); 0 if unreadable.
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0, resident_pages = 0;
  if (!(statm >> total_pages >> resident_pages)) return 0;
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

MallocTrimmer::MallocTrimmer(std::size_t free_bytes_bound, std::chrono::milliseconds period,
                             std::shared_ptr<ServerMetrics> metrics)
    : free_bytes_bound_(free_bytes_bound), period_(period), metrics_(std::move(metrics)) {
  if (free_bytes_bound_ == 0 || !read_malloc_stats().available) return;
  thread_ = std::thread([this] {
    name_this_thread("voxrt-trim");
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, period_, [this] { return stopping_; })) {
      lock.unlock();
      check_once();
      lock.lock();
    }
  });
}

MallocTrimmer::~MallocTrimmer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool MallocTrimmer::check_once() {
#if defined(__GLIBC__)
  const MallocStats stats = read_malloc_stats();
  if (!stats.available || stats.free_bytes <= free_bytes_bound_) return false;
  const std::size_t before_bytes = resident_bytes();
  const auto start = std::chrono::steady_clock::now();
  malloc_trim(0);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  const std::size_t after_bytes = resident_bytes();
  if (metrics_) {
    metrics_->malloc_trims_total.Increment();
    metrics_->malloc_trim_seconds_total.Increment(took.count());
    // Other threads allocate meanwhile: the difference is what the trim returned, give or take.
    if (before_bytes > after_bytes)
      metrics_->malloc_trimmed_bytes_total.Increment(static_cast<double>(before_bytes - after_bytes));
  }
  return true;
#else
  return false;
#endif
}

}  // namespace voxrt::server
