// Whether an optimization profile admits an input's dims: the one rule by which a run picks its
// profile (the first that admits every input it names), shared by the runtime, which reports
// why no profile fits, and the CUDA executor, which runs each profile's tactics.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "voxrt/builder.h"
#include "voxrt/status.h"

namespace voxrt::backends {

// Empty when `profile` admits `dims` for input `input` (or does not name that input); else why
// not, e.g. "input 'x' is 1x5, allowed 1x1 .. 1x4".
inline std::string profile_mismatch(const OptimizationProfile& profile, const std::string& input,
                                    const Dims& dims) {
  auto it = profile.inputs.find(input);
  if (it == profile.inputs.end()) return {};
  const ShapeRange& range = it->second;
  if (dims.size() != range.min.size()) {
    return str_cat("input '", input, "' has rank ", dims.size(), ", the profile has rank ",
                   range.min.size());
  }
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] < range.min[d] || dims[d] > range.max[d]) {
      return str_cat("input '", input, "' is ", dims_to_string(dims), ", allowed ",
                     dims_to_string(range.min), " .. ", dims_to_string(range.max));
    }
  }
  return {};
}

// The first of `profiles` that admits every input (`name_of(i)` and `dims_of(i)` for i <
// `count`), or an error that lists, per profile, the input it refused; -1 when there are no
// profiles.
inline Expected<int> first_fitting_profile(const std::vector<OptimizationProfile>& profiles,
                                           std::size_t count,
                                           const std::function<std::string(std::size_t)>& name_of,
                                           const std::function<Dims(std::size_t)>& dims_of) {
  if (profiles.empty()) return -1;
  std::string why;
  for (std::size_t p = 0; p < profiles.size(); ++p) {
    std::string mismatch;
    for (std::size_t i = 0; i < count && mismatch.empty(); ++i)
      mismatch = profile_mismatch(profiles[p], name_of(i), dims_of(i));
    if (mismatch.empty()) return static_cast<int>(p);
    why += str_cat("\n  profile '", profiles[p].name, "': ", mismatch);
  }
  return out_of_range("the input shapes fit no optimization profile of the engine:", why);
}

}  // namespace voxrt::backends
