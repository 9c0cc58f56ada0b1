// Conv geometry shared by dense shape inference and the CPU dense kernels, so the output size a
// plan was built for and the one a kernel computes come from one formula.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace voxrt::ir {

// Conv / FusedConv attributes after defaults, for `spatial_rank` spatial dims.
struct ConvAttributes {
  int spatial_rank = 0;
  std::int64_t group = 1;
  // Empty when the attribute is absent (then it comes from W).
  std::vector<std::int64_t> kernel_shape;
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  // [begin..., end...]; ignored unless auto_pad is NOTSET.
  std::vector<std::int64_t> pads;
  std::string auto_pad = "NOTSET";
};

// Reads and validates the attributes of a Conv/FusedConv node with that many spatial dims.
Expected<ConvAttributes> read_conv_attributes(const Node& node, int spatial_rank);

// One spatial dim resolved: the output extent and the explicit pads that produce it.
struct ConvExtent {
  std::int64_t output = 0;
  std::int64_t pad_begin = 0;
  std::int64_t pad_end = 0;
};

// Output extent of spatial dim `axis` for input extent `input` and kernel extent `kernel`.
Expected<ConvExtent> resolve_conv_extent(const Node& node, const ConvAttributes& attrs, int axis,
                                         std::int64_t input, std::int64_t kernel);

// The full geometry for concrete X and W dims (what a kernel needs at run time).
struct ConvGeometry {
  std::int64_t batch = 0;
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t group = 1;
  std::vector<std::int64_t> input;   // spatial extents of X
  std::vector<std::int64_t> kernel;  // spatial extents of W
  std::vector<std::int64_t> output;  // spatial extents of Y
  std::vector<std::int64_t> strides;
  std::vector<std::int64_t> dilations;
  std::vector<std::int64_t> pads_begin;
  std::vector<std::int64_t> pads_end;
};
Expected<ConvGeometry> resolve_conv_geometry(const Node& node, const Dims& x_dims,
                                             const Dims& w_dims);

}  // namespace voxrt::ir
