// glibc malloc settings the server makes at startup. Measured reason (docs/perf/server.md, "the
// RSS step"): glibc raises its mmap threshold to the size of every mmapped block that is freed
// (up to 32 MiB), so after the first large buffer of the compute worker is freed, later large
// buffers (their sizes vary with batch size and backlog) come from the worker's arena instead of
// their own mappings; the arena keeps its peak, and on the loaded 2-core machine the holes left
// between long-lived chunks held 44-52 MB that glibc could not return. A fixed threshold keeps
// large buffers in mappings that go back to the system when freed (and turns the dynamic
// adjustment off: mallopt(M_MMAP_THRESHOLD) does both).
#pragma once

#include <cstddef>

#include "voxrt/status.h"

namespace voxrt::server {

// Sets glibc's mmap threshold for this process: blocks of at least `bytes` get their own
// mapping. 0 leaves glibc's dynamic threshold. An error where the C library is not glibc and
// `bytes` is not 0, or where glibc refuses the value. It applies to blocks malloc cannot take
// from free memory it already holds: that is reused first.
// Under a sanitizer's allocator (ASan, TSan builds) glibc's malloc is not in use: nothing is
// set and the call succeeds, so the sanitized server and its fuzzer run with the default flags.
Status set_malloc_mmap_threshold(std::size_t bytes);

// True in a build whose allocator is a sanitizer's (ASan, TSan), not glibc's.
bool sanitizer_allocator();

}  // namespace voxrt::server
