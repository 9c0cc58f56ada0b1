// The INT8 calibration cache (`voxrt build --calibration-cache F`): the chosen range of every
// calibrated activation and each quantizable layer's precision decision and measured
// sensitivity, so that a rebuild skips calibration (and may do without the data). It is keyed
// by what decides those numbers: the model file, the front end and chunking (the voxrt.feature.*
// and chunk metadata), the builder version and the calibrator; a cache whose key differs is
// ignored and rewritten. When data is given, its fingerprint must match too.
//
// Text, one record per line:
//   voxrt-int8-calibration 1
//   key <model hash> <front-end hash> <calibrator> <percentile> <builder version...>
//   data <fingerprint...>
//   range <name length> <name> <min> <max> <scale> <zero point> <symmetric 0|1>
//   layer <name length> <name> <int8 0|1> <output error> <argmax changed> <reason...>
// Names are length-prefixed (ONNX names may hold spaces); floats are written to round-trip.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/quantized/int8_quantization.h"
#include "voxrt/calibration.h"

namespace voxrt::builder::calibration {

struct CachedRange {
  float min = 0, max = 0;
  backends::cpu::quantized::ActivationQuantization quantization;
  bool symmetric = false;
};

struct CalibrationCache {
  std::string key;
  std::string data_fingerprint;
  std::map<std::string, CachedRange> ranges;  // by value name
  std::vector<Int8LayerReport> layers;        // in graph order

  // nullopt: no file there. A malformed file is an error naming the line.
  static Expected<std::optional<CalibrationCache>> load(const std::string& path);
  Status save(const std::string& path) const;
};

}  // namespace voxrt::builder::calibration
