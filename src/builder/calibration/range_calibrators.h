// Calibrators: an activation's histogram -> its INT8 quantization (the formats of
// backends/cpu/quantized/int8_quantization.h). Each calibrator proposes a symmetric range and an
// asymmetric one; the one with the smaller expected squared error over the observed
// distribution (rounding inside the range, clipping outside) is chosen, so a one-sided tensor (a
// ReLU's output) gets all 256 levels on [0, max] and a symmetric one keeps zero in the middle.
#pragma once

#include "backends/cpu/quantized/int8_quantization.h"
#include "builder/calibration/tensor_histogram.h"
#include "voxrt/calibration.h"

namespace voxrt::builder::calibration {

using backends::cpu::quantized::ActivationQuantization;

struct CalibratedRange {
  ActivationQuantization quantization;
  bool symmetric = false;
  double expected_squared_error = 0;  // per value, over the histogram
};

// Expected squared error of quantizing the histogram's values with `q`: every value inside the
// representable range costs scale^2 / 12 (uniform rounding error), every value outside its
// distance to the nearest end, squared (bins by their centres).
double expected_squared_error(const TensorHistogram& histogram, const ActivationQuantization& q);

// The clipping threshold on |x| (TensorRT's entropy calibration): among thresholds from
// `levels` bins up to the whole folded histogram, the one whose quantization to `levels` levels
// keeps the distribution closest in KL divergence. `folded` is a histogram over [0, range).
double entropy_threshold(const std::vector<std::uint64_t>& folded, double range, int levels);

// The value below which `fraction` of the histogram's mass lies (bin resolution).
double histogram_quantile(const TensorHistogram& histogram, double fraction);

CalibratedRange calibrate_range(const TensorHistogram& histogram, Calibrator calibrator,
                                double percentile);

}  // namespace voxrt::builder::calibration
