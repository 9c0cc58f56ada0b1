// A small fixed pool for data-parallel kernels. parallel_for splits [0, count) into contiguous
// ranges, runs them on the pool and the calling thread, and returns when all are done.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace voxrt {

class ThreadPool {
 public:
  // threads = total workers including the caller; 1 runs everything inline.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // fn(begin, end) for disjoint ranges covering [0, count); ranges are at least `grain` long.
  void parallel_for(std::int64_t count, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& fn);

 private:
  void worker_loop(int index);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(std::int64_t, std::int64_t)>* job_ = nullptr;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;
  std::uint64_t generation_ = 0;
  int remaining_ = 0;
  bool stopping_ = false;
  std::mutex call_mutex_;  // one parallel_for at a time per pool
};

}  // namespace voxrt
