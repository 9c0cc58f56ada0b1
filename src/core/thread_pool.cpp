#include "core/thread_pool.h"

#include <algorithm>

#include "core/thread_name.h"

namespace voxrt {

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
    ++finished_ranges_;
  }
  work_done_.wait(lock, [this] { return finished_ranges_ == ranges_.size(); });
  job_ = nullptr;
}

void ThreadPool::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    work_ready_.wait(
        lock, [&] { return stopping_ || (job_ != nullptr && next_range_ < ranges_.size()); });
    if (stopping_) return;
    std::pair<std::int64_t, std::int64_t> range;
    while (claim(range)) {
      const auto* job = job_;
      lock.unlock();
      (*job)(range.first, range.second);
      lock.lock();
      if (++finished_ranges_ == ranges_.size()) work_done_.notify_one();
    }
  }
}

}  // namespace voxrt
