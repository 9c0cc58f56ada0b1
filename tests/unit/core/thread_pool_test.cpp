// ThreadPool: every index is covered exactly once whatever the pool and range sizes, calls from
// several threads are serialised, and a call never waits for a worker that has not started
// (the caller runs the ranges nobody took).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace voxrt {
namespace {

TEST(ThreadPool, CoversEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (std::int64_t count : {1, 2, 3, 7, 64, 1000}) {
      for (std::int64_t grain : {1, 4, 100}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(count));
        std::atomic<int> ranges{0};
        pool.parallel_for(count, grain, [&](std::int64_t begin, std::int64_t end) {
          ++ranges;
          EXPECT_LT(begin, end);
          for (std::int64_t i = begin; i < end; ++i) ++hits[static_cast<std::size_t>(i)];
        });
        for (const auto& h : hits) EXPECT_EQ(h.load(), 1);
        EXPECT_LE(ranges.load(), threads);
      }
    }
  }
}

TEST(ThreadPool, ManyCallsFromSeveralThreads) {
  ThreadPool pool(3);
  std::atomic<std::int64_t> total{0};
  auto caller = [&] {
    for (int call = 0; call < 500; ++call) {
      pool.parallel_for(10, 1, [&](std::int64_t begin, std::int64_t end) { total += end - begin; });
    }
  };
  std::thread a(caller), b(caller);
  a.join();
  b.join();
  EXPECT_EQ(total.load(), 2 * 500 * 10);
}

TEST(ThreadPool, CallerRunsRangesNoWorkerStarted) {
  // The caller's own range is slow; by the time it is done a worker has had time to take the
  // other one, or the caller takes it: either way both run and the call returns.
  ThreadPool pool(2);
  std::atomic<int> done{0};
  for (int call = 0; call < 50; ++call) {
    pool.parallel_for(2, 1, [&](std::int64_t begin, std::int64_t) {
      if (begin == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
      ++done;
    });
  }
  EXPECT_EQ(done.load(), 100);
}

}  // namespace
}  // namespace voxrt
