#include "builder/calibration/tensor_histogram.h"

#include <algorithm>
#include <cmath>

namespace voxrt::builder::calibration {
namespace {

// The smallest power of two >= x (x > 0); ranges below 2^-40 are taken as 2^-40 (the tensor is
// then all but zero and any scale will do).
double power_of_two_at_least(double x) {
  x = std::max(x, std::ldexp(1.0, -40));
  int exponent = 0;
  const double mantissa = std::frexp(x, &exponent);  // x = mantissa * 2^exponent, [0.5, 1)
  return mantissa == 0.5 ? x : std::ldexp(1.0, exponent);
}

}  // namespace

void TensorHistogram::grow_to(double needed) {
  const double new_range = power_of_two_at_least(needed);
  if (range_ == 0) {
    range_ = new_range;
    bins_.assign(2 * kBinsPerSide, 0);
    return;
  }
  if (new_range <= range_) return;
  // Each doubling merges bins in pairs around zero: a bin's offset from the centre halves.
  const auto factor = static_cast<std::int64_t>(std::llround(new_range / range_));
  std::vector<std::uint64_t> merged(2 * kBinsPerSide, 0);
  for (int i = 0; i < 2 * kBinsPerSide; ++i) {
    const std::int64_t offset = i - kBinsPerSide;  // [-kBinsPerSide, kBinsPerSide)
    // floor division, so that negative offsets stay on their side of zero
    const std::int64_t moved = offset >= 0 ? offset / factor : -((-offset + factor - 1) / factor);
    merged[static_cast<std::size_t>(moved + kBinsPerSide)] += bins_[static_cast<std::size_t>(i)];
  }
  bins_ = std::move(merged);
  range_ = new_range;
}

void TensorHistogram::add(std::span<const float> values) {
  float batch_min = 0, batch_max = 0;
  bool any = false;
  for (float v : values) {
    if (!std::isfinite(v)) continue;
    batch_min = any ? std::min(batch_min, v) : v;
    batch_max = any ? std::max(batch_max, v) : v;
    any = true;
  }
  if (any) {
    min_ = count_ - non_finite_ > 0 ? std::min(min_, batch_min) : batch_min;
    max_ = count_ - non_finite_ > 0 ? std::max(max_, batch_max) : batch_max;
    // (A value equal to the range lands in the last bin: the index is clamped below.)
    const double needed = std::max(std::fabs(static_cast<double>(batch_min)),
                                   std::fabs(static_cast<double>(batch_max)));
    if (range_ == 0 || needed > range_) grow_to(needed);
  }
  const double inverse_width = range_ > 0 ? kBinsPerSide / range_ : 0.0;
  for (float v : values) {
    ++count_;
    if (!std::isfinite(v)) {
      ++non_finite_;
      continue;
    }
    const auto index = static_cast<std::int64_t>(std::floor(v * inverse_width)) + kBinsPerSide;
    ++bins_[static_cast<std::size_t>(std::clamp<std::int64_t>(index, 0, 2 * kBinsPerSide - 1))];
  }
}

std::vector<std::uint64_t> TensorHistogram::folded_absolute() const {
  std::vector<std::uint64_t> folded(kBinsPerSide, 0);
  if (bins_.empty()) return folded;
  for (int j = 0; j < kBinsPerSide; ++j) {
    folded[static_cast<std::size_t>(j)] = bins_[static_cast<std::size_t>(kBinsPerSide + j)] +
                                          bins_[static_cast<std::size_t>(kBinsPerSide - 1 - j)];
  }
  return folded;
}

}  // namespace voxrt::builder::calibration
