// A small fixed pool for data-parallel kernels. parallel_for splits [0, count) into contiguous
// ranges and returns when all are done. The calling thread takes ranges too, and any range
// that no worker has started by the time the caller is free is run by the caller: a call waits
// only for ranges a worker is actually running, never for a worker to be scheduled. On shared,
// busy cores (a worker may not run for milliseconds) the pool therefore degrades to the
// caller's own speed instead of stalling every call; kernels must not make one range wait for
// another (ranges may run one after the other on one thread).
//
// A worker that finishes a job watches for the next one for a short while (spin_microseconds())
// before it sleeps on the condition variable, and a caller whose ranges are done watches the
// workers' for as long before it sleeps: an inference runs its layers' parallel_for calls
// microseconds apart, and waking a sleeping thread costs tens of microseconds on a VM, more
// than a small layer's whole share of work. Between inferences the workers sleep.
#pragma once

#include <atomic>
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
  // How long an idle worker watches for new work, and a caller for the workers' ranges, before
  // it sleeps: kDefaultSpinMicroseconds, or VOXRT_POOL_SPIN_US (0 = sleep at once, for cores
  // shared with other busy processes, where spinning takes time from them).
  static constexpr int kDefaultSpinMicroseconds = 200;
  static int spin_microseconds();
  // fn(begin, end) for disjoint ranges covering [0, count); ranges are at least `grain` long,
  // and there are at most threads() of them.
  void parallel_for(std::int64_t count, std::int64_t grain,
                    const std::function<void(std::int64_t, std::int64_t)>& fn);

 private:
  void worker_loop();
  // Claims the next unstarted range of the current job under mutex_; false when none is left.
  bool claim(std::pair<std::int64_t, std::int64_t>& range);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable work_done_;
  const std::function<void(std::int64_t, std::int64_t)>* job_ = nullptr;
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges_;
  std::size_t next_range_ = 0;
  // Written under mutex_; atomic so that a caller can watch it without the lock.
  std::atomic<std::size_t> finished_ranges_{0};
  bool stopping_ = false;
  // Bumped (under mutex_) whenever a job is posted or the pool stops; idle workers watch it.
  std::atomic<std::uint64_t> generation_{0};
  std::mutex call_mutex_;  // one parallel_for at a time per pool
};

}  // namespace voxrt
