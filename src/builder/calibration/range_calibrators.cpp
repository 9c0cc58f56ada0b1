#include "builder/calibration/range_calibrators.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace voxrt::builder::calibration {
namespace {

std::uint64_t finite_count(const TensorHistogram& h) {
  return h.count() - h.non_finite();
}

// The two halves of the signed histogram as histograms of |x| over [0, range): the positive
// side (bins kBinsPerSide..) and the negative side mirrored.
std::vector<std::uint64_t> half(const TensorHistogram& h, bool positive) {
  const int n = TensorHistogram::kBinsPerSide;
  std::vector<std::uint64_t> out(static_cast<std::size_t>(n), 0);
  if (h.bins().empty()) return out;
  for (int j = 0; j < n; ++j) {
    out[static_cast<std::size_t>(j)] =
        h.bins()[static_cast<std::size_t>(positive ? n + j : n - 1 - j)];
  }
  return out;
}

// Normalizes `d` and moves a little mass onto its empty bins (MXNet's smoothing, which
// TensorRT's entropy calibration inherited): otherwise a threshold that clips a few outliers
// into an empty bin would diverge infinitely and never be chosen, however rare the outliers.
void normalize_and_smooth(std::vector<double>& d) {
  constexpr double kEpsilon = 1e-4;
  const double total = std::accumulate(d.begin(), d.end(), 0.0);
  const auto zeros = static_cast<double>(std::count(d.begin(), d.end(), 0.0));
  const double nonzeros = static_cast<double>(d.size()) - zeros;
  if (total <= 0 || nonzeros == 0) return;
  const double taken = kEpsilon * zeros / nonzeros;
  for (double& v : d) v = v == 0 ? kEpsilon : v / total - taken;
}

double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  double sum = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i] > 0 && q[i] > 0) sum += p[i] * std::log(p[i] / q[i]);
  }
  return sum;
}

}  // namespace

double expected_squared_error(const TensorHistogram& histogram, const ActivationQuantization& q) {
  const std::uint64_t total = finite_count(histogram);
  if (total == 0) return 0;
  const double lowest = q.lowest(), highest = q.highest();
  const double rounding = static_cast<double>(q.scale) * q.scale / 12.0;
  const double width = histogram.bin_width();
  double sum = 0;
  for (std::size_t i = 0; i < histogram.bins().size(); ++i) {
    const std::uint64_t mass = histogram.bins()[i];
    if (mass == 0) continue;
    const double centre = histogram.bin_left(static_cast<int>(i)) + width / 2;
    const double outside = centre < lowest    ? lowest - centre
                           : centre > highest ? centre - highest
                                              : 0;
    sum += static_cast<double>(mass) * (outside > 0 ? outside * outside : rounding);
  }
  return sum / static_cast<double>(total);
}

double entropy_threshold(const std::vector<std::uint64_t>& histogram, double range, int levels) {
  // The first bin (exact zeros, a ReLU's half of the tensor) would outweigh everything else:
  // it counts as much as its neighbour (as TensorRT's calibrator does).
  std::vector<std::uint64_t> folded = histogram;
  if (folded.size() > 1) folded[0] = folded[1];
  const int bins = static_cast<int>(folded.size());
  const double width = range / bins;
  // The last bin with any mass bounds the search: thresholds past it clip nothing more.
  int last = bins;
  while (last > 0 && folded[static_cast<std::size_t>(last - 1)] == 0) --last;
  if (last <= levels) return std::max(last, 1) * width;  // no more bins than levels: exact
  double best_divergence = INFINITY;
  int best = last;
  std::vector<double> reference, expanded;
  for (int i = levels; i <= last; ++i) {
    // The distribution clipped at bin i: outliers pile into the last bin kept.
    reference.assign(folded.begin(), folded.begin() + i);
    for (int j = i; j < last; ++j)
      reference[static_cast<std::size_t>(i - 1)] += folded[static_cast<std::size_t>(j)];
    // ... and quantized to `levels` levels, each level's mass spread over its non-empty bins.
    expanded.assign(static_cast<std::size_t>(i), 0.0);
    const int merged = i / levels;
    for (int level = 0; level < levels; ++level) {
      const int start = level * merged;
      const int stop = level == levels - 1 ? i : start + merged;
      double mass = 0;
      int occupied = 0;
      for (int j = start; j < stop; ++j) {
        mass += static_cast<double>(folded[static_cast<std::size_t>(j)]);
        occupied += folded[static_cast<std::size_t>(j)] != 0;
      }
      if (occupied == 0) continue;
      for (int j = start; j < stop; ++j) {
        if (folded[static_cast<std::size_t>(j)] != 0)
          expanded[static_cast<std::size_t>(j)] = mass / occupied;
      }
    }
    if (std::accumulate(expanded.begin(), expanded.end(), 0.0) <= 0) continue;
    normalize_and_smooth(reference);
    normalize_and_smooth(expanded);
    const double divergence = kl_divergence(reference, expanded);
    // Ties keep the smaller threshold (finer steps), so the choice is deterministic.
    if (divergence < best_divergence) {
      best_divergence = divergence;
      best = i;
    }
  }
  return best * width;
}

double histogram_quantile(const TensorHistogram& histogram, double fraction) {
  const std::uint64_t total = finite_count(histogram);
  if (total == 0) return 0;
  const double wanted = fraction * static_cast<double>(total);
  double cumulative = 0;
  for (std::size_t i = 0; i < histogram.bins().size(); ++i) {
    cumulative += static_cast<double>(histogram.bins()[i]);
    if (cumulative >= wanted) {
      const double right = histogram.bin_left(static_cast<int>(i)) + histogram.bin_width();
      return std::clamp<double>(right, histogram.min(), histogram.max());
    }
  }
  return histogram.max();
}

CalibratedRange calibrate_range(const TensorHistogram& histogram, Calibrator calibrator,
                                double percentile) {
  if (finite_count(histogram) == 0) {
    return CalibratedRange{ActivationQuantization::symmetric(1.0), true, 0.0};
  }
  const double lo = histogram.min(), hi = histogram.max();
  double threshold = 0, asym_lo = 0, asym_hi = 0;
  switch (calibrator) {
    case Calibrator::kMinMax:
      threshold = std::max(std::fabs(lo), std::fabs(hi));
      asym_lo = lo;
      asym_hi = hi;
      break;
    case Calibrator::kPercentile: {
      const double keep = std::clamp(percentile / 100.0, 0.5, 1.0);
      // |x|'s quantile, from the folded histogram.
      const std::vector<std::uint64_t> folded = histogram.folded_absolute();
      const double wanted = keep * static_cast<double>(finite_count(histogram));
      double cumulative = 0;
      threshold = std::max(std::fabs(lo), std::fabs(hi));
      for (std::size_t j = 0; j < folded.size(); ++j) {
        cumulative += static_cast<double>(folded[j]);
        if (cumulative >= wanted) {
          threshold = std::min(threshold, (static_cast<double>(j) + 1) * histogram.bin_width());
          break;
        }
      }
      asym_lo = histogram_quantile(histogram, (1 - keep) / 2);
      asym_hi = histogram_quantile(histogram, 1 - (1 - keep) / 2);
      break;
    }
    case Calibrator::kEntropy: {
      const double range = histogram.range();
      threshold = std::min(entropy_threshold(histogram.folded_absolute(), range, 128),
                           std::max(std::fabs(lo), std::fabs(hi)));
      // A one-sided tensor keeps the same clipping with all 256 levels on its side (half the
      // rounding error); a two-sided one gets each side's own threshold.
      if (lo >= 0) {
        asym_hi = threshold;
      } else if (hi <= 0) {
        asym_lo = -threshold;
      } else {
        asym_lo = -std::min(entropy_threshold(half(histogram, false), range, 128), -lo);
        asym_hi = std::min(entropy_threshold(half(histogram, true), range, 128), hi);
      }
      break;
    }
  }
  CalibratedRange symmetric{ActivationQuantization::symmetric(threshold), true, 0.0};
  CalibratedRange asymmetric{ActivationQuantization::asymmetric(asym_lo, asym_hi), false, 0.0};
  symmetric.expected_squared_error = expected_squared_error(histogram, symmetric.quantization);
  asymmetric.expected_squared_error = expected_squared_error(histogram, asymmetric.quantization);
  return asymmetric.expected_squared_error < symmetric.expected_squared_error ? asymmetric
                                                                              : symmetric;
}

}  // namespace voxrt::builder::calibration
