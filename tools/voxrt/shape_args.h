// Parsing of shape arguments in trtexec style: "x:1x1x161x100/1x1x161x200/8x1x161x400" for a
// profile (min/opt/max), "x:1x1x161x200" for one shape, "NAME=VALUE" for fixed inputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "voxrt/builder.h"

namespace voxrt::cli {

Expected<Dims> parse_dims(const std::string& text);  // "1x80x100"; "scalar" or "" for rank 0
// Repeating an input name starts the next profile (profile k takes each name's k-th range).
Expected<std::vector<OptimizationProfile>> parse_profiles(const std::vector<std::string>& specs);
Expected<std::map<std::string, Dims>> parse_shapes(const std::vector<std::string>& specs);
Expected<StatePair> parse_state(const std::string& spec);
// "sr=16000" (i64) or "scale=0.5f"/"scale=0.5" with a dot (f32).
Expected<std::pair<std::string, Tensor>> parse_fixed_input(const std::string& spec);

}  // namespace voxrt::cli
