#include "stream/batch_limit.h"

#include <algorithm>

#include "runtime/engine_impl.h"

namespace voxrt::stream {

std::optional<std::int64_t> largest_profile_batch(const Engine& engine, const std::string& input) {
  const auto& profiles = engine.impl().contents.profiles;
  if (profiles.empty()) return std::nullopt;
  std::int64_t largest = 0;
  for (const auto& profile : profiles) {
    auto it = profile.inputs.find(input);
    if (it == profile.inputs.end() || it->second.max.empty()) return std::nullopt;
    largest = std::max(largest, it->second.max[0]);
  }
  return largest;
}

Expected<int> resolve_max_batch(const Engine& engine, const std::string& input, int requested,
                                int default_max, const std::string& where) {
  const std::optional<std::int64_t> largest = largest_profile_batch(engine, input);
  if (largest && requested > *largest) {
    return invalid_argument(where, ": max_batch ", requested,
                            " is above the largest batch the engine's profiles admit for '", input,
                            "' (", *largest,
                            "): lower it, or build the engine for larger batches (voxrt build "
                            "--profile, or --max-batch with --model-dir)");
  }
  if (requested > 0) return requested;
  return static_cast<int>(std::min<std::int64_t>(default_max, largest.value_or(default_max)));
}

}  // namespace voxrt::stream
