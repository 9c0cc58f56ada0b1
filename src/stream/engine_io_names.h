// Finding an engine's inputs and outputs by name, and listing them in errors: what every model
// family does with the tensors its contract names.
#pragma once

#include <string>
#include <vector>

#include "voxrt/engine.h"

namespace voxrt::stream {

// The position of `name` among `infos`, or -1.
inline int index_of(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

// "a, b, c": the names of `infos`, for errors that say what an engine has.
inline std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string out;
  for (const auto& info : infos) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

}  // namespace voxrt::stream
