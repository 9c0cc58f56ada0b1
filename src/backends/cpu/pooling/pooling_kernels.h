// Internal to the CPU pooling family (f32): MaxPool, AveragePool and their global forms. Window
// geometry comes from ir::resolve_pool_geometry, the same function shape inference uses.
#pragma once

#include <memory>

#include "backends/cpu/cpu_backend.h"
#include "ir/shape_inference/pooling.h"

namespace voxrt::backends::cpu::pooling {

inline constexpr TacticId kBlockedTactic = 1;

inline bool is_max_pool(ir::OpKind op) {
  return op == ir::OpKind::kMaxPool || op == ir::OpKind::kGlobalMaxPool;
}

// Geometry for the run-time input dims, checked against the output the runtime allocated.
inline Expected<ir::PoolGeometry> run_time_geometry(const ir::Node& node, const Tensor& in,
                                                    const Tensor& out) {
  if (in.rank() < 3 || out.rank() != in.rank()) {
    return internal_error(node.describe(), ": input ", dims_to_string(in.dims()), ", output ",
                          dims_to_string(out.dims()));
  }
  const std::vector<std::int64_t> spatial(in.dims().begin() + 2, in.dims().end());
  VOXRT_ASSIGN_OR_RETURN(ir::PoolGeometry g, ir::resolve_pool_geometry(node, spatial));
  for (std::size_t i = 0; i < spatial.size(); ++i) {
    if (g.output[i] != out.dim(i + 2)) {
      return internal_error(node.describe(), ": output ", dims_to_string(out.dims()),
                            " does not match the pooling geometry (axis ", i, ": ", g.output[i],
                            ")");
    }
  }
  return g;
}

std::unique_ptr<Kernel> make_reference_pool_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_blocked_pool_kernel(const ir::Node& node);

}  // namespace voxrt::backends::cpu::pooling
