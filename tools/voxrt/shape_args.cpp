#include "shape_args.h"

#include <charconv>

namespace voxrt::cli {
namespace {
Expected<std::pair<std::string, std::string>> split_name(const std::string& spec, char sep,
                                                         const char* example) {
  const auto at = spec.rfind(sep);
  if (at == std::string::npos || at == 0) {
    return invalid_argument("'", spec, "': expected NAME", sep, "..., e.g. ", example);
  }
  return std::make_pair(spec.substr(0, at), spec.substr(at + 1));
}
}  // namespace

Expected<Dims> parse_dims(const std::string& text) {
  Dims dims;
  if (text.empty() || text == "scalar") return dims;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto next = text.find('x', pos);
    const std::string part =
        text.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
    if (ec != std::errc() || ptr != part.data() + part.size() || value < 0) {
      return invalid_argument("shape '", text, "': '", part,
                              "' is not a non-negative integer (write dims like 1x80x100)");
    }
    dims.push_back(value);
    if (next == std::string::npos) break;
    pos = next + 1;
  }
  return dims;
}

Expected<std::vector<OptimizationProfile>> parse_profiles(const std::vector<std::string>& specs) {
  std::vector<OptimizationProfile> profiles;
  std::map<std::string, std::size_t> seen;
  for (const auto& spec : specs) {
    VOXRT_ASSIGN_OR_RETURN(auto parts, split_name(spec, ':', "x:1x80x16/1x80x32/8x80x64"));
    const auto& [name, ranges] = parts;
    std::vector<std::string> three;
    std::size_t pos = 0;
    for (;;) {
      const auto slash = ranges.find('/', pos);
      three.push_back(
          ranges.substr(pos, slash == std::string::npos ? std::string::npos : slash - pos));
      if (slash == std::string::npos) break;
      pos = slash + 1;
    }
    if (three.size() != 3) {
      return invalid_argument("--profile '", spec,
                              "': expected MIN/OPT/MAX (three shapes separated by '/'), found ",
                              three.size());
    }
    ShapeRange range;
    VOXRT_ASSIGN_OR_RETURN(range.min, parse_dims(three[0]));
    VOXRT_ASSIGN_OR_RETURN(range.opt, parse_dims(three[1]));
    VOXRT_ASSIGN_OR_RETURN(range.max, parse_dims(three[2]));
    const std::size_t index = seen[name]++;
    if (profiles.size() <= index)
      profiles.push_back(OptimizationProfile{str_cat("profile", index), {}});
    profiles[index].inputs[name] = std::move(range);
  }
  return profiles;
}

Expected<std::map<std::string, Dims>> parse_shapes(const std::vector<std::string>& specs) {
  std::map<std::string, Dims> shapes;
  for (const auto& spec : specs) {
    VOXRT_ASSIGN_OR_RETURN(auto parts, split_name(spec, ':', "x:1x80x100"));
    VOXRT_ASSIGN_OR_RETURN(shapes[parts.first], parse_dims(parts.second));
  }
  return shapes;
}

Expected<StatePair> parse_state(const std::string& spec) {
  const auto at = spec.find(':');
  if (at == std::string::npos || at == 0 || at + 1 == spec.size()) {
    return invalid_argument("--state '", spec,
                            "': expected IN:OUT (a state input and the output that updates it)");
  }
  return StatePair{spec.substr(0, at), spec.substr(at + 1)};
}

Expected<std::pair<std::string, Tensor>> parse_fixed_input(const std::string& spec) {
  VOXRT_ASSIGN_OR_RETURN(auto parts, split_name(spec, '=', "sr=16000"));
  const std::string& v = parts.second;
  if (v.find('.') != std::string::npos || (!v.empty() && v.back() == 'f')) {
    try {
      return std::make_pair(parts.first, Tensor::scalar_f32(std::stof(v)));
    } catch (...) {
      return invalid_argument("--fixed-input '", spec, "': '", v, "' is not a number");
    }
  }
  std::int64_t value = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (ec != std::errc() || ptr != v.data() + v.size()) {
    return invalid_argument("--fixed-input '", spec, "': '", v, "' is not an integer");
  }
  return std::make_pair(parts.first, Tensor::scalar_i64(value));
}

}  // namespace voxrt::cli
