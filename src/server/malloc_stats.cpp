#include "server/malloc_stats.h"

#include <cstdio>
#include <cstdlib>
#include <string_view>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace voxrt::server {

#if defined(__GLIBC__)

namespace {

// malloc_info writes XML with one <heap nr="N"> element per arena; mallinfo2 sums over arenas
// but does not say how many there are.
std::size_t count_arenas() {
  char* text = nullptr;
  std::size_t size = 0;
  std::FILE* stream = open_memstream(&text, &size);
  if (stream == nullptr) return 0;
  const bool written = malloc_info(0, stream) == 0;
  std::fclose(stream);
  std::size_t arenas = 0;
  if (written && text != nullptr) {
    const std::string_view xml(text, size);
    constexpr std::string_view kHeap = "<heap nr=";
    for (auto at = xml.find(kHeap); at != std::string_view::npos; at = xml.find(kHeap, at + 1))
      ++arenas;
  }
  std::free(text);
  return arenas;
}

}  // namespace

MallocStats read_malloc_stats() {
  const struct mallinfo2 info = mallinfo2();
  MallocStats stats;
  stats.available = true;
  stats.in_use_bytes = info.uordblks + info.hblkhd;
  stats.free_bytes = info.fordblks;
  stats.mmapped_bytes = info.hblkhd;
  stats.arenas = count_arenas();
  return stats;
}

#else

MallocStats read_malloc_stats() {
  return {};
}

#endif

}  // namespace voxrt::server
