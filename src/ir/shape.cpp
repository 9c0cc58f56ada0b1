#include "ir/shape.h"

namespace voxrt::ir {

SymShape sym_shape_from_dims(const Dims& dims) {
  SymShape shape;
  shape.reserve(dims.size());
  for (std::int64_t d : dims) shape.push_back(Dim::known(d));
  return shape;
}

bool is_fully_known(const SymShape& shape) {
  for (const Dim& d : shape) {
    if (!d.is_known()) return false;
  }
  return true;
}

std::optional<Dims> known_dims(const SymShape& shape) {
  Dims dims;
  dims.reserve(shape.size());
  for (const Dim& d : shape) {
    if (!d.is_known()) return std::nullopt;
    dims.push_back(d.value);
  }
  return dims;
}

std::string sym_shape_to_string(const SymShape& shape) {
  if (shape.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) out += "x";
    if (shape[i].is_known()) {
      out += std::to_string(shape[i].value);
    } else {
      out += shape[i].symbol.empty() ? "?" : shape[i].symbol;
    }
  }
  return out;
}

}  // namespace voxrt::ir
