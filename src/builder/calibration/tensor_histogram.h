// The distribution of one activation tensor over a calibration run: a signed histogram whose
// range grows as larger values arrive, so one pass over the data is enough. The range is always
// a power of two and grows by doubling, so old bins nest exactly in new ones and the result does
// not depend on how the values were split into batches, only on their order of arrival (and not
// even on that, up to the first power of two above the first batch's maximum).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace voxrt::builder::calibration {

class TensorHistogram {
 public:
  // Bins on each side of zero; bin i of bins() covers [-range + i * w, -range + (i + 1) * w)
  // with w = range / kBinsPerSide.
  static constexpr int kBinsPerSide = 2048;

  void add(std::span<const float> values);

  std::uint64_t count() const { return count_; }
  std::uint64_t non_finite() const { return non_finite_; }
  float min() const { return min_; }
  float max() const { return max_; }
  double range() const { return range_; }
  double bin_width() const { return range_ / kBinsPerSide; }
  const std::vector<std::uint64_t>& bins() const { return bins_; }
  // Left edge of bin i.
  double bin_left(int i) const { return -range_ + i * bin_width(); }
  // |x| folded onto kBinsPerSide bins over [0, range): bin j counts the x in bins
  // kBinsPerSide + j and kBinsPerSide - 1 - j.
  std::vector<std::uint64_t> folded_absolute() const;

 private:
  void grow_to(double needed);

  std::uint64_t count_ = 0;
  std::uint64_t non_finite_ = 0;
  float min_ = 0, max_ = 0;
  double range_ = 0;  // 0 until the first finite value
  std::vector<std::uint64_t> bins_;
};

}  // namespace voxrt::builder::calibration
