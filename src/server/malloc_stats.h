// What glibc's malloc holds, for the server's metrics: whether resident memory that grows is in
// use by the program (a cache, a leak) or free memory malloc keeps in its arenas (fragmentation,
// a thread's arena). docs/perf/server.md ("the RSS step") is what this was added to measure.
#pragma once

#include <cstddef>

namespace voxrt::server {

struct MallocStats {
  bool available = false;         // false where the C library is not glibc
  std::size_t in_use_bytes = 0;   // allocated and not freed, heaps and mmapped chunks
  std::size_t free_bytes = 0;     // free chunks malloc keeps in its heaps
  std::size_t mmapped_bytes = 0;  // chunks above the mmap threshold, each its own mapping
  std::size_t arenas = 0;         // the main arena and one per thread, up to 8 per core
};

// Walks every arena (mallinfo2 and malloc_info lock them one at a time): call it when metrics are
// read, not per frame.
MallocStats read_malloc_stats();

}  // namespace voxrt::server
