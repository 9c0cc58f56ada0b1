// Whether an optimization profile admits an input's dims: the one rule by which a run picks its
// profile (the first that admits every input it names), shared by the runtime, which reports
// why no profile fits, and the CUDA executor, which runs each profile's tactics.
#pragma once

#include <cstddef>
#include <string>

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

}  // namespace voxrt::backends
