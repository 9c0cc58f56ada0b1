// Attribute and index resolution shared by data-movement shape inference and the kernels, so the
// dims that shape inference promises and the bytes a kernel writes come from one computation.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"
#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::ir {

// Transpose's "perm" (default: reversed axes), checked to be a permutation of [0, rank).
Expected<std::vector<std::int64_t>> transpose_permutation(const Node& node, std::int64_t rank);

// One axis of a resolved Slice: output element j reads input index start + j * step.
struct SliceAxis {
  std::int64_t start = 0;
  std::int64_t step = 1;
  // Output extent; -1 when the input dim is unknown.
  std::int64_t count = -1;
  // The axis is not sliced at all (not listed, or x[0:INT_MAX] of an unknown dim).
  bool whole = false;
};

// Resolves Slice's starts/ends/axes/steps (axes and steps may be empty = defaults) against
// `dims` (-1 = unknown) with ONNX's negative-index and clamping rules; one entry per dim.
Expected<std::vector<SliceAxis>> resolve_slice(const Node& node, const Dims& dims,
                                               const std::vector<std::int64_t>& starts,
                                               const std::vector<std::int64_t>& ends,
                                               const std::vector<std::int64_t>& axes,
                                               const std::vector<std::int64_t>& steps);

enum class PadMode : std::uint8_t { kConstant, kEdge, kReflect };
Expected<PadMode> pad_mode(const Node& node);
// Pad's pads input ([begin..., end...] over `axes`, default every axis) as 2*rank values,
// begins first, for every axis of a rank-`rank` input.
Expected<std::vector<std::int64_t>> resolve_pads(const Node& node, std::int64_t rank,
                                                 const std::vector<std::int64_t>& pads,
                                                 const std::vector<std::int64_t>& axes);

// Split's chunk sizes along `axis` of extent `dim` (known), from the split input (may be empty:
// equal chunks, one per output).
Expected<std::vector<std::int64_t>> resolve_split(const Node& node, std::int64_t dim,
                                                  const std::vector<std::int64_t>& split);

// Shape's [start, end) over a rank-`rank` input (opset 15 attributes, clamped).
std::pair<std::int64_t, std::int64_t> shape_op_range(const Node& node, std::int64_t rank);

// Range's element count for start/limit/delta (error on delta == 0).
Expected<std::int64_t> range_element_count(const Node& node, double start, double limit,
                                           double delta);

}  // namespace voxrt::ir
