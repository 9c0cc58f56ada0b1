#include "core/thread_pool.h"

#include <algorithm>

namespace voxrt {

ThreadPool::ThreadPool(int threads) {
  const int extra = std::max(threads, 1) - 1;
  for (int i = 0; i < extra; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  for (auto& w : workers_) w.join();
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
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
  for (std::int64_t p = 0; p < parts; ++p)
    ranges.emplace_back(count * p / parts, count * (p + 1) / parts);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    ranges_.assign(ranges.begin() + 1, ranges.end());
    remaining_ = static_cast<int>(ranges_.size());
    ++generation_;
  }
  work_ready_.notify_all();
  fn(ranges[0].first, ranges[0].second);
  std::unique_lock<std::mutex> lock(mutex_);
  work_done_.wait(lock, [this] { return remaining_ == 0; });
  job_ = nullptr;
}

void ThreadPool::worker_loop(int) {
  std::uint64_t seen = 0;
  for (;;) {
    std::unique_lock<std::mutex> lock(mutex_);
    work_ready_.wait(lock, [&] { return stopping_ || (generation_ != seen && !ranges_.empty()); });
    if (stopping_) return;
    auto range = ranges_.back();
    ranges_.pop_back();
    if (ranges_.empty()) seen = generation_;
    const auto* job = job_;
    lock.unlock();
    (*job)(range.first, range.second);
    lock.lock();
    if (--remaining_ == 0) work_done_.notify_all();
  }
}

}  // namespace voxrt
