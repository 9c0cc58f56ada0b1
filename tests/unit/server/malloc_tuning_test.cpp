// server/malloc_tuning.h: with the threshold fixed, a large buffer freed does not move later
// large buffers into the heap, where the holes they leave stay resident (what stepped the soak's
// RSS up, docs/perf/server.md).
#include "server/malloc_tuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "server/malloc_stats.h"

namespace voxrt::server {
namespace {

constexpr std::size_t kKiB = 1024;

void touch(void* block, std::size_t bytes) {
  static_cast<volatile char*>(block)[0] = 1;
  static_cast<volatile char*>(block)[bytes - 1] = 1;
}

TEST(MallocTuning, AFreedLargeBlockDoesNotMoveLaterOnesIntoTheHeap) {
  if (sanitizer_allocator()) GTEST_SKIP() << "a sanitizer's allocator replaces glibc's malloc";
  if (!read_malloc_stats().available) GTEST_SKIP() << "not glibc";
  ASSERT_TRUE(set_malloc_mmap_threshold(128 * kKiB).ok());
  // On a new thread: its own new arena, with no free chunks that could serve the blocks below
  // (glibc takes a request from free heap memory before it considers a mapping).
  std::size_t mmapped_before = 0, mmapped_held = 0, mmapped_after = 0;
  constexpr int kBlocks = 8;
  std::thread([&] {
    // Under glibc's dynamic threshold, freeing this mapped 4 MiB block raises the threshold to
    // 4 MiB, and the 1 MiB blocks below come from the arena's heap instead.
    void* large = std::malloc(4096 * kKiB);
    touch(large, 4096 * kKiB);
    std::free(large);
    mmapped_before = read_malloc_stats().mmapped_bytes;
    void* blocks[kBlocks];
    for (void*& block : blocks) {
      block = std::malloc(1024 * kKiB);
      touch(block, 1024 * kKiB);
    }
    mmapped_held = read_malloc_stats().mmapped_bytes;
    for (void* block : blocks) std::free(block);
    mmapped_after = read_malloc_stats().mmapped_bytes;
  }).join();
  EXPECT_GE(mmapped_held, mmapped_before + kBlocks * 1024 * kKiB)
      << "the 1 MiB blocks came from the heap: the mmap threshold moved";
  EXPECT_LE(mmapped_after, mmapped_before) << "freed mapped blocks are unmapped at once";
}

}  // namespace
}  // namespace voxrt::server
