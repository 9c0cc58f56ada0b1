#include "server/malloc_tuning.h"

#include <cstdint>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace voxrt::server {

bool sanitizer_allocator() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

Status set_malloc_mmap_threshold(std::size_t bytes) {
  // ASan's mallopt refuses every setting (found by the fuzz smoke run: the sanitized server
  // would not start); its allocator has no such threshold to fix.
  if (bytes == 0 || sanitizer_allocator()) return Status::ok();
#if defined(__GLIBC__)
  if (bytes > static_cast<std::size_t>(INT32_MAX) ||
      mallopt(M_MMAP_THRESHOLD, static_cast<int>(bytes)) != 1)
    return invalid_argument("serve: glibc refused ", bytes,
                            " bytes as its mmap threshold (mallopt M_MMAP_THRESHOLD)");
  return Status::ok();
#else
  return unsupported("serve: malloc's mmap threshold (", bytes,
                     " bytes) can only be set with glibc; pass --malloc-mmap-threshold-kib 0");
#endif
}

}  // namespace voxrt::server
