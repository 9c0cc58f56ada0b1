#include <algorithm>

#include "backends/cpu/reduction/reduction_kernels.h"

namespace voxrt::backends::cpu::reduction {

Expected<std::vector<bool>> reduced_axes(const std::string& where, const Dims& dims,
                                         const Tensor* axes, bool noop_with_empty_axes) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  std::vector<bool> reduced(dims.size(), false);
  const std::vector<std::int64_t> axis_list =
      axes ? axes->to_i64_vector() : std::vector<std::int64_t>{};
  if (axis_list.empty()) {
    if (!noop_with_empty_axes) std::fill(reduced.begin(), reduced.end(), true);
    return reduced;
  }
  for (std::int64_t axis : axis_list) {
    if (axis < -rank || axis >= rank) {
      return invalid_argument(where, ": axis ", axis, " is out of range for an input of shape ",
                              dims_to_string(dims));
    }
    const auto normalized = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    if (reduced[normalized]) return invalid_argument(where, ": axis ", axis, " is listed twice");
    reduced[normalized] = true;
  }
  return reduced;
}

std::optional<BlockedLayout> blocked_layout(const Dims& dims, const std::vector<bool>& reduced) {
  // Runs of (size, reduced) with size-1 dims dropped: they change neither order nor counts.
  std::vector<std::pair<std::int64_t, bool>> runs;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!runs.empty() && runs.back().second == reduced[d]) {
      runs.back().first *= dims[d];
    } else {
      runs.emplace_back(dims[d], reduced[d]);
    }
  }
  BlockedLayout layout;
  std::size_t next = 0;
  if (next < runs.size() && !runs[next].second) layout.outer = runs[next++].first;
  if (next < runs.size() && runs[next].second) layout.reduce = runs[next++].first;
  if (next < runs.size() && !runs[next].second) layout.inner = runs[next++].first;
  if (next != runs.size()) return std::nullopt;
  return layout;
}

Expected<std::int64_t> normalized_axis(const std::string& where, std::int64_t axis,
                                       std::size_t rank) {
  const auto signed_rank = static_cast<std::int64_t>(rank);
  if (axis < -signed_rank || axis >= signed_rank) {
    return invalid_argument(where, ": axis ", axis, " is out of range for rank ", rank);
  }
  return axis < 0 ? axis + signed_rank : axis;
}

BlockedLayout single_axis_layout(const Dims& dims, std::int64_t axis) {
  BlockedLayout layout;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(dims.size()); ++d) {
    const std::int64_t size = dims[static_cast<std::size_t>(d)];
    if (d < axis) {
      layout.outer *= size;
    } else if (d == axis) {
      layout.reduce = size;
    } else {
      layout.inner *= size;
    }
  }
  return layout;
}

std::int64_t task_grain(std::int64_t item_elements) {
  return std::max<std::int64_t>(1, kMinElementsPerTask / std::max<std::int64_t>(item_elements, 1));
}

}  // namespace voxrt::backends::cpu::reduction
