// Comparing outputs with references: numpy.allclose semantics for floats (|a-b| <= atol +
// rtol*|b|), exact equality for integers and bools; NaN passes only
// where the reference is NaN too, an infinity only where the reference is the same infinity.
#pragma once

#include <string>

#include "voxrt/tensor.h"

namespace voxrt::cli {

struct Comparison {
  bool shapes_match = false;
  bool within_tolerance = false;
  double max_abs_error = 0;
  double mean_abs_error = 0;
  double max_rel_error = 0;
  std::int64_t mismatches = 0;
  std::int64_t first_mismatch = -1;
  std::string describe() const;
};

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol);

}  // namespace voxrt::cli
