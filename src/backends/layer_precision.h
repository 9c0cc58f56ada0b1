// A layer's precision, stored in the engine as a node attribute: set by the builder
// (BuilderConfig::layer_precisions, and on the CPU for every layer once its kernels are known),
// read by the backends when they list tactics and prepare kernels, and shown by `voxrt inspect`.
#pragma once

#include <cstdint>

#include "ir/graph.h"
#include "voxrt/builder.h"

namespace voxrt::backends {

// The Precision value; absent: the engine's precision.
inline constexpr char kLayerPrecisionAttr[] = "voxrt.precision";

inline Precision layer_precision(const ir::Node& node, Precision engine_precision) {
  const std::int64_t value = node.attrs.get_int(kLayerPrecisionAttr, -1);
  if (value < static_cast<std::int64_t>(Precision::kFp32) ||
      value > static_cast<std::int64_t>(Precision::kInt8))
    return engine_precision;
  return static_cast<Precision>(value);
}

}  // namespace voxrt::backends
