// Pooling window geometry, shared by shape inference and the pooling kernels so that the output
// dims promised at build time and the windows a kernel walks come from one computation.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"

namespace voxrt::ir {

struct PoolGeometry {
  // Per spatial axis; -1 where the input extent (and so the output, or a SAME pad) is unknown.
  std::vector<std::int64_t> input;
  std::vector<std::int64_t> output;
  std::vector<std::int64_t> kernel;
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pad_begin;
  std::vector<std::int64_t> pad_end;
  // AveragePool: divide by the whole window including padding (not the ceil_mode overhang).
  bool count_include_pad = false;
};

// Resolves kernel_shape, strides, pads, auto_pad, dilations and ceil_mode of MaxPool/AveragePool
// (or the whole-extent window of GlobalAveragePool/GlobalMaxPool) for input spatial dims
// `spatial` (the dims after N and C).
Expected<PoolGeometry> resolve_pool_geometry(const Node& node,
                                             const std::vector<std::int64_t>& spatial);

}  // namespace voxrt::ir
