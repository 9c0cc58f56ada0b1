// How many streams one engine call of a model family takes: what its engine's optimization
// profiles admit on the batch axis, and the Recognizer's max_batch resolved against it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "voxrt/engine.h"
#include "voxrt/status.h"

namespace voxrt::stream {

// The largest batch (axis 0) that some optimization profile of `engine` admits for `input`;
// nullopt when any batch runs (no profiles, or a profile that does not bound the input).
std::optional<std::int64_t> largest_profile_batch(const Engine& engine, const std::string& input);

// Streams per engine call: `requested` (RecognizerConfig::max_batch), or for 0 the largest batch
// the profiles admit for `input`, at most `default_max` (RecognizerConfig::kDefaultMaxBatch). A
// request above what the profiles admit is an error that names both numbers and `where`.
Expected<int> resolve_max_batch(const Engine& engine, const std::string& input, int requested,
                                int default_max, const std::string& where);

}  // namespace voxrt::stream
