// Shapes whose dimensions may be symbolic ("batch", "T") until the runtime binds them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "voxrt/tensor.h"

namespace voxrt::ir {

struct Dim {
  // Known size, or -1 while symbolic/unknown.
  std::int64_t value = -1;
  // Name of a symbolic dimension ("batch"); empty when unnamed or known.
  std::string symbol;

  static Dim known(std::int64_t v) { return Dim{v, {}}; }
  static Dim symbolic(std::string name) { return Dim{-1, std::move(name)}; }
  bool is_known() const { return value >= 0; }
  bool operator==(const Dim&) const = default;
};

using SymShape = std::vector<Dim>;

SymShape sym_shape_from_dims(const Dims& dims);
// All dims known?
bool is_fully_known(const SymShape& shape);
// Concrete dims of a fully known shape; nullopt otherwise.
std::optional<Dims> known_dims(const SymShape& shape);
std::string sym_shape_to_string(const SymShape& shape);  // "batch x 80 x ?"

}  // namespace voxrt::ir
