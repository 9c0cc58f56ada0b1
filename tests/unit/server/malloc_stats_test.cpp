// server/malloc_stats.h against allocations of known sizes: the metrics that tell a leak from
// memory malloc keeps (docs/perf/server.md, "the RSS step").
#include "server/malloc_stats.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>
#include <vector>

#include "server/malloc_tuning.h"

namespace voxrt::server {
namespace {

// Below glibc's smallest mmap threshold (128 KiB), so these come from the heap.
constexpr std::size_t kSmallBytes = 16 * 1024;
constexpr int kSmallCount = 256;  // 4 MiB in all
// Above the largest threshold (32 MiB): always its own mapping.
constexpr std::size_t kLargeBytes = std::size_t{64} << 20;

void touch(void* block, std::size_t bytes) {
  // Written, so the allocation cannot be elided.
  static_cast<volatile char*>(block)[0] = 1;
  static_cast<volatile char*>(block)[bytes - 1] = 1;
}

class MallocStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (sanitizer_allocator()) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's malloc";
    if (!read_malloc_stats().available) GTEST_SKIP() << "not glibc";
  }
};

TEST_F(MallocStatsTest, HeapAllocationsAreInUseAndFreedOnesAreFree) {
  const MallocStats before = read_malloc_stats();
  std::vector<void*> blocks;
  for (int i = 0; i < kSmallCount; ++i) {
    blocks.push_back(std::malloc(kSmallBytes));
    touch(blocks.back(), kSmallBytes);
  }
  const MallocStats held = read_malloc_stats();
  EXPECT_GE(held.in_use_bytes, before.in_use_bytes + kSmallBytes * kSmallCount)
      << "before " << before.in_use_bytes << " bytes in use";
  // Every other block freed: the holes between live blocks stay with malloc as free memory.
  for (int i = 0; i < kSmallCount; i += 2) {
    std::free(blocks[i]);
    blocks[i] = nullptr;
  }
  const MallocStats holed = read_malloc_stats();
  EXPECT_LE(holed.in_use_bytes, held.in_use_bytes - kSmallBytes * kSmallCount / 2);
  EXPECT_GE(holed.free_bytes, kSmallBytes * kSmallCount / 2);
  for (void* block : blocks) std::free(block);
}

TEST_F(MallocStatsTest, LargeAllocationsAreMapped) {
  const MallocStats before = read_malloc_stats();
  void* block = std::malloc(kLargeBytes);
  ASSERT_NE(block, nullptr);
  touch(block, kLargeBytes);
  const MallocStats held = read_malloc_stats();
  EXPECT_GE(held.mmapped_bytes, before.mmapped_bytes + kLargeBytes);
  EXPECT_GE(held.in_use_bytes, before.in_use_bytes + kLargeBytes);
  std::free(block);
  EXPECT_LT(read_malloc_stats().mmapped_bytes, held.mmapped_bytes);
}

TEST_F(MallocStatsTest, AThreadThatAllocatesHasItsOwnArena) {
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr || std::getenv("GLIBC_TUNABLES") != nullptr)
    GTEST_SKIP() << "the arena limit is set in the environment";
  EXPECT_GE(read_malloc_stats().arenas, 1U) << "the main arena";
  // glibc gives a thread's first malloc a new arena (up to 8 per core), not the main one.
  std::thread([] {
    void* block = std::malloc(kSmallBytes);
    touch(block, kSmallBytes);
    std::free(block);
  }).join();
  EXPECT_GE(read_malloc_stats().arenas, 2U);
}

}  // namespace
}  // namespace voxrt::server
