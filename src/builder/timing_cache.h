// Persistent tactic timings (STYLE.md 8): keyed by op, attributes, input dtypes/dims, whether
// inputs are constant, tactic, CPU fingerprint and thread count. The same cache gives the same
// plan, and a second build with it times nothing it has seen.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "backends/kernel.h"

namespace voxrt::builder {

class TimingCache {
 public:
  // A missing file is an empty cache; a malformed one is an error naming the line.
  static Expected<TimingCache> load(const std::string& path);
  Status save(const std::string& path) const;

  static std::string key(const ir::Node& node, std::span<const Tensor* const> inputs,
                         const backends::TacticInfo& tactic, const std::string& fingerprint,
                         int threads);
  std::optional<double> find(const std::string& key) const;
  void put(const std::string& key, double time_us) { entries_[key] = time_us; }
  std::size_t size() const { return entries_.size(); }

 private:
  std::map<std::string, double> entries_;
};

}  // namespace voxrt::builder
