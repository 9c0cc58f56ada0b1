#include "thread_check.h"

namespace voxrt::cli {

std::string thread_count_warning(const Engine& engine, int threads) {
  auto it = engine.metadata().find("voxrt.tuned_threads");
  if (it == engine.metadata().end() || it->second == std::to_string(threads)) return "";
  return "warning: the engine's tactics were timed with " + it->second +
         " thread(s), this run uses " + std::to_string(threads) +
         "; other tactics may be faster here: rebuild with voxrt build --threads " +
         std::to_string(threads) + " (a timing cache keeps the other count's times)";
}

}  // namespace voxrt::cli
