#include "core/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "core/thread_name.h"

namespace voxrt {
namespace {

void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// Returns when done() holds or after about ThreadPool::spin_microseconds().
template <typename Done>
void spin_until(const Done& done) {
  const int spin_us = ThreadPool::spin_microseconds();
  if (spin_us <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (int i = 1; !done(); ++i) {
    spin_pause();
    if (i % 64 == 0 && std::chrono::steady_clock::now() > until) return;
  }
}

}  // namespace

int ThreadPool::spin_microseconds() {
  static const int spin_us = [] {
    const char* text = std::getenv("VOXRT_POOL_SPIN_US");
    if (!text || !*text) return kDefaultSpinMicroseconds;
    return std::clamp(std::atoi(text), 0, 100000);
  }();
  return spin_us;
}

ThreadPool::ThreadPool(int threads) {
  const int extra = std::max(threads, 1) - 1;
  for (int i = 0; i < extra; ++i)
    workers_.emplace_back([this] {
      name_this_thread("voxrt-pool");
      worker_loop();
    });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    generation_.fetch_add(1, std::memory_order_release);
  }
  work_ready_.notify_all();
  for (auto& w : workers_) w.join();
}

bool ThreadPool::claim(std::pair<std::int64_t, std::int64_t>& range) {
  if (job_ == nullptr || next_range_ >= ranges_.size()) return false;
  range = ranges_[next_range_++];
  return true;
}

void ThreadPool::parallel_for(std::int64_t count, std::int64_t grain,
                              const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (count <= 0) return;
  grain = std::max<std::int64_t>(grain, 1);
  const std::int64_t max_parts = std::max<std::int64_t>(1, count / grain);
  const std::int64_t parts = std::min<std::int64_t>(threads(), max_parts);
  if (parts <= 1) {
    fn(0, count);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mutex_);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ranges_.clear();
    for (std::int64_t p = 0; p < parts; ++p)
      ranges_.emplace_back(count * p / parts, count * (p + 1) / parts);
    next_range_ = 0;
    finished_ranges_ = 0;
    job_ = &fn;
    generation_.fetch_add(1, std::memory_order_release);
  }
  if (parts == 2)
    work_ready_.notify_one();
  else
    work_ready_.notify_all();
  std::unique_lock<std::mutex> lock(mutex_);
  std::pair<std::int64_t, std::int64_t> range;
  while (claim(range)) {
    lock.unlock();
    fn(range.first, range.second);
    lock.lock();
    finished_ranges_.fetch_add(1, std::memory_order_release);
  }
  const std::size_t total = ranges_.size();
  if (finished_ranges_.load(std::memory_order_acquire) != total) {
    // The workers' ranges are running: watch them without the lock for a while, then sleep.
    lock.unlock();
    spin_until([&] { return finished_ranges_.load(std::memory_order_acquire) == total; });
    lock.lock();
    work_done_.wait(lock, [&] { return finished_ranges_.load() == total; });
  }
  job_ = nullptr;
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto has_work = [&] {
      return stopping_ || (job_ != nullptr && next_range_ < ranges_.size());
    };
    if (!has_work()) {
      // Watch for the next job without the lock for a while, then sleep.
      const std::uint64_t seen = generation_.load(std::memory_order_acquire);
      lock.unlock();
      spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      work_ready_.wait(lock, has_work);
    }
    if (stopping_) return;
    std::pair<std::int64_t, std::int64_t> range;
    while (claim(range)) {
      const auto* job = job_;
      lock.unlock();
      (*job)(range.first, range.second);
      lock.lock();
      if (finished_ranges_.fetch_add(1, std::memory_order_release) + 1 == ranges_.size())
        work_done_.notify_one();
    }
  }
}

}  // namespace voxrt
