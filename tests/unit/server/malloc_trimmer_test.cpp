// server/malloc_trimmer.h: free memory glibc keeps between live chunks (what held the soak's
// resident memory 64 MiB up, docs/perf/server.md) goes back to the system, and only above the
// bound.
#include "server/malloc_trimmer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>
#include <vector>

#include "server/malloc_stats.h"
#include "server/server_metrics.h"

namespace voxrt::server {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitizerAllocator = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitizerAllocator = true;
#else
constexpr bool kSanitizerAllocator = false;
#endif
#else
constexpr bool kSanitizerAllocator = false;
#endif

constexpr std::size_t kMiB = std::size_t{1} << 20;
// Blocks below glibc's smallest mmap threshold (128 KiB), so they live in the heap; every other
// one is freed and the ones between stay allocated, which leaves holes that glibc's own trimming
// (the top of the heap only) cannot return. (Small pins would be carved from free chunks
// elsewhere and leave the holes adjacent, and they would merge into the top.)
constexpr std::size_t kHoleBytes = 96 * 1024;
constexpr int kHoles = 512;  // 48 MiB

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t total_pages = 0, resident_pages = 0;
  statm >> total_pages >> resident_pages;
  return resident_pages * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

class MallocTrimmerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (kSanitizerAllocator) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's malloc";
    if (!read_malloc_stats().available) GTEST_SKIP() << "not glibc";
    for (int i = 0; i < 2 * kHoles; ++i) {
      blocks_.push_back(std::malloc(kHoleBytes));
      std::memset(blocks_.back(), 1, kHoleBytes);  // resident
    }
    for (int i = 0; i < 2 * kHoles; i += 2) {
      std::free(blocks_[i]);
      blocks_[i] = nullptr;
    }
  }
  void TearDown() override {
    for (void* block : blocks_) std::free(block);
  }

  std::vector<void*> blocks_;
};

TEST_F(MallocTrimmerTest, ReturnsFreeMemoryAboveTheBound) {
  const std::size_t held_bytes = resident_bytes();
  ASSERT_GE(read_malloc_stats().free_bytes, kHoleBytes * kHoles);
  auto metrics = std::make_shared<ServerMetrics>();
  // A period longer than the test: only check_once() trims here.
  MallocTrimmer trimmer(16 * kMiB, std::chrono::hours(1), metrics);
  // Before the trim glibc still holds the holes resident (the cause the trimmer removes).
  EXPECT_GE(resident_bytes() + 8 * kMiB, held_bytes);
  EXPECT_TRUE(trimmer.check_once());
  const std::size_t trimmed_bytes = resident_bytes();
  EXPECT_LE(trimmed_bytes + 40 * kMiB, held_bytes)
      << "resident " << held_bytes / kMiB << " MiB before the trim, " << trimmed_bytes / kMiB
      << " MiB after";
  EXPECT_EQ(metrics->malloc_trims_total.Value(), 1.0);
  EXPECT_GE(metrics->malloc_trimmed_bytes_total.Value(), 40.0 * kMiB);
}

TEST_F(MallocTrimmerTest, LeavesFreeMemoryBelowTheBound) {
  const std::size_t held_bytes = resident_bytes();
  auto metrics = std::make_shared<ServerMetrics>();
  MallocTrimmer trimmer(1024 * kMiB, std::chrono::hours(1), metrics);
  EXPECT_FALSE(trimmer.check_once());
  EXPECT_GE(resident_bytes() + 8 * kMiB, held_bytes);
  EXPECT_EQ(metrics->malloc_trims_total.Value(), 0.0);
}

TEST(MallocTrimmer, AZeroBoundStartsNothingAndStopsAtOnce) {
  auto metrics = std::make_shared<ServerMetrics>();
  // Destroyed at once, although its period is an hour: the thread wakes on stop.
  MallocTrimmer running(kMiB, std::chrono::hours(1), metrics);
  MallocTrimmer off(0, std::chrono::hours(1), metrics);
  SUCCEED();
}

}  // namespace
}  // namespace voxrt::server
