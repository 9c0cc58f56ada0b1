// Log-domain arithmetic the transducer beam searches share (RNN-T and TDT), in double so that
// long hypotheses' sums keep their precision.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <utility>
#include <vector>

namespace voxrt::decode {

// log(exp(a) + exp(b)), exact where one side is -inf.
inline double log_add(double a, double b) {
  if (a < b) std::swap(a, b);
  if (b == -std::numeric_limits<double>::infinity()) return a;
  return a + std::log1p(std::exp(b - a));
}

// log-softmax of a row of `count` logits into `out`.
inline void log_softmax(const float* logits, int count, std::vector<double>& out) {
  out.resize(static_cast<std::size_t>(count));
  const double top = *std::max_element(logits, logits + count);
  double sum = 0.0;
  for (int v = 0; v < count; ++v) sum += std::exp(static_cast<double>(logits[v]) - top);
  const double log_sum = top + std::log(sum);
  for (int v = 0; v < count; ++v) out[static_cast<std::size_t>(v)] = logits[v] - log_sum;
}

}  // namespace voxrt::decode
