#include "tensor_compare.h"

#include <cmath>
#include <sstream>

namespace voxrt::cli {

Comparison compare_tensors(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  Comparison c;
  c.shapes_match = actual.dims() == expected.dims() && actual.dtype() == expected.dtype();
  if (!c.shapes_match) return c;
  const bool exact = !is_floating(expected.dtype());
  double sum = 0;
  for (std::int64_t i = 0; i < expected.element_count(); ++i) {
    const double a = actual.element_as_double(i);
    const double b = expected.element_as_double(i);
    double err = std::fabs(a - b);
    if (std::isnan(a) || std::isnan(b)) err = (std::isnan(a) && std::isnan(b)) ? 0 : INFINITY;
    if (std::isinf(a) && std::isinf(b) && (a > 0) == (b > 0)) err = 0;
    // Both NaN (err 0) must pass without reading rtol * |NaN|.
    const bool ok = exact || err == 0 ? err == 0 : err <= atol + rtol * std::fabs(b);
    if (!ok) {
      if (c.first_mismatch < 0) c.first_mismatch = i;
      ++c.mismatches;
    }
    sum += std::isfinite(err) ? err : 0;
    c.max_abs_error = std::max(c.max_abs_error, err);
    if (std::fabs(b) > 0) c.max_rel_error = std::max(c.max_rel_error, err / std::fabs(b));
  }
  c.mean_abs_error =
      expected.element_count() ? sum / static_cast<double>(expected.element_count()) : 0;
  c.within_tolerance = c.mismatches == 0;
  return c;
}

std::string Comparison::describe() const {
  std::ostringstream out;
  if (!shapes_match) return "shape or dtype differs";
  out << "max_abs " << max_abs_error << " mean_abs " << mean_abs_error << " max_rel "
      << max_rel_error;
  if (mismatches)
    out << ", " << mismatches << " elements out of tolerance (first at " << first_mismatch << ")";
  return out.str();
}

}  // namespace voxrt::cli
