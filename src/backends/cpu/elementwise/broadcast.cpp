#include "backends/cpu/elementwise/broadcast.h"

namespace voxrt::backends::cpu::elementwise {

BroadcastPlan make_broadcast_plan(const Dims& out, std::span<const Dims> inputs) {
  BroadcastPlan plan;
  plan.count = element_count(out);
  plan.strides.resize(inputs.size());
  // Per-dim strides, right-aligned, with size-1 output dims dropped (they move nothing).
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    plan.dims.push_back(out[d]);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const Dims& in = inputs[k];
      const std::size_t lead = out.size() - in.size();
      std::int64_t stride = 0;
      if (d >= lead && in[d - lead] != 1) {
        stride = 1;
        for (std::size_t e = d - lead + 1; e < in.size(); ++e) stride *= in[e];
      }
      plan.strides[k].push_back(stride);
    }
  }
  if (plan.dims.empty()) {
    plan.dims.push_back(1);
    for (Dims& s : plan.strides) s.push_back(0);
    return plan;
  }
  // Merge dim d into d-1 wherever every input continues contiguously (or broadcasts both).
  Dims dims{plan.dims[0]};
  std::vector<Dims> strides(inputs.size());
  for (std::size_t k = 0; k < inputs.size(); ++k) strides[k].push_back(plan.strides[k][0]);
  for (std::size_t d = 1; d < plan.dims.size(); ++d) {
    bool mergeable = true;
    for (std::size_t k = 0; k < inputs.size() && mergeable; ++k) {
      const std::int64_t outer = strides[k].back();
      const std::int64_t here = plan.strides[k][d];
      mergeable = outer == here * plan.dims[d];
    }
    if (mergeable) {
      dims.back() *= plan.dims[d];
      for (std::size_t k = 0; k < inputs.size(); ++k) strides[k].back() = plan.strides[k][d];
    } else {
      dims.push_back(plan.dims[d]);
      for (std::size_t k = 0; k < inputs.size(); ++k) strides[k].push_back(plan.strides[k][d]);
    }
  }
  plan.dims = std::move(dims);
  plan.strides = std::move(strides);
  return plan;
}

}  // namespace voxrt::backends::cpu::elementwise
