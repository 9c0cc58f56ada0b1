// The attribute and index resolution declared in data_movement.h (shared with the kernels).
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/shape_inference.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::ir {

Expected<std::vector<std::int64_t>> transpose_permutation(const Node& node, std::int64_t rank) {
  std::vector<std::int64_t> perm = node.attrs.get_ints("perm");
  if (!node.attrs.has("perm")) {
    for (std::int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
    return perm;
  }
  if (static_cast<std::int64_t>(perm.size()) != rank) {
    return invalid_argument(node.describe(), ": perm has ", perm.size(), " entries for rank ",
                            rank);
  }
  std::vector<bool> seen(static_cast<std::size_t>(rank), false);
  for (std::int64_t& p : perm) {
    if (p < 0) p += rank;
    if (p < 0 || p >= rank || seen[static_cast<std::size_t>(p)]) {
      return invalid_argument(node.describe(), ": perm is not a permutation of 0..", rank - 1);
    }
    seen[static_cast<std::size_t>(p)] = true;
  }
  return perm;
}

Expected<std::vector<SliceAxis>> resolve_slice(const Node& node, const Dims& dims,
                                               const std::vector<std::int64_t>& starts,
                                               const std::vector<std::int64_t>& ends,
                                               const std::vector<std::int64_t>& axes,
                                               const std::vector<std::int64_t>& steps) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  const std::size_t count = starts.size();
  if (ends.size() != count || (!axes.empty() && axes.size() != count) ||
      (!steps.empty() && steps.size() != count)) {
    return invalid_argument(node.describe(),
                            ": starts, ends, axes and steps must have one length; "
                            "got ",
                            count, ", ", ends.size(), ", ", axes.size(), ", ", steps.size());
  }
  std::vector<SliceAxis> result;
  for (std::int64_t d : dims) result.push_back(SliceAxis{0, 1, d, true});
  std::vector<bool> seen(dims.size(), false);
  constexpr std::int64_t kWholeEnd = std::numeric_limits<std::int32_t>::max();
  for (std::size_t i = 0; i < count; ++i) {
    const std::int64_t raw_axis = axes.empty() ? static_cast<std::int64_t>(i) : axes[i];
    VOXRT_ASSIGN_OR_RETURN(std::int64_t axis, normalize_axis(node, raw_axis, rank));
    if (seen[static_cast<std::size_t>(axis)]) {
      return invalid_argument(node.describe(), ": axis ", raw_axis, " is sliced twice");
    }
    seen[static_cast<std::size_t>(axis)] = true;
    const std::int64_t step = steps.empty() ? 1 : steps[i];
    if (step == 0) return invalid_argument(node.describe(), ": steps[", i, "] is 0");
    const std::int64_t dim = dims[static_cast<std::size_t>(axis)];
    std::int64_t start = starts[i];
    std::int64_t end = ends[i];
    SliceAxis& a = result[static_cast<std::size_t>(axis)];
    if (dim < 0) {
      // Unknown extent: only x[0:INT_MAX:1] is known to keep it (count stays -1, start 0, step 1).
      const bool whole = step == 1 && start == 0 && end >= kWholeEnd;
      a = SliceAxis{whole ? 0 : start, whole ? 1 : step, -1, whole};
      continue;
    }
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    if (step > 0) {
      start = std::clamp<std::int64_t>(start, 0, dim);
      end = std::clamp<std::int64_t>(end, 0, dim);
      a = SliceAxis{start, step, end > start ? (end - start - 1) / step + 1 : 0};
    } else if (dim == 0) {
      a = SliceAxis{0, step, 0};
    } else {
      start = std::clamp<std::int64_t>(start, 0, dim - 1);
      end = std::clamp<std::int64_t>(end, -1, dim - 1);
      const std::int64_t magnitude = step == std::numeric_limits<std::int64_t>::min()
                                         ? std::numeric_limits<std::int64_t>::max()
                                         : -step;
      a = SliceAxis{start, step, start > end ? (start - end - 1) / magnitude + 1 : 0};
    }
  }
  return result;
}

Expected<PadMode> pad_mode(const Node& node) {
  const std::string mode = node.attrs.get_string("mode", "constant");
  if (mode == "constant") return PadMode::kConstant;
  if (mode == "edge") return PadMode::kEdge;
  if (mode == "reflect") return PadMode::kReflect;
  return unsupported(node.describe(), ": pad mode '", mode,
                     "' (expected constant, edge or reflect)");
}

Expected<std::vector<std::int64_t>> resolve_pads(const Node& node, std::int64_t rank,
                                                 const std::vector<std::int64_t>& pads,
                                                 const std::vector<std::int64_t>& axes) {
  std::vector<std::int64_t> axis_list;
  if (axes.empty()) {
    for (std::int64_t i = 0; i < rank; ++i) axis_list.push_back(i);
  } else {
    for (std::int64_t a : axes) {
      VOXRT_ASSIGN_OR_RETURN(std::int64_t axis, normalize_axis(node, a, rank));
      axis_list.push_back(axis);
    }
  }
  const std::size_t count = axis_list.size();
  if (pads.size() != 2 * count) {
    return invalid_argument(node.describe(), ": pads has ", pads.size(), " values, expected ",
                            2 * count, " (begin and end for each of ", count, " axes)");
  }
  std::vector<std::int64_t> result(static_cast<std::size_t>(2 * rank), 0);
  for (std::size_t i = 0; i < count; ++i) {
    const auto axis = static_cast<std::size_t>(axis_list[i]);
    result[axis] = pads[i];
    result[axis + static_cast<std::size_t>(rank)] = pads[i + count];
  }
  return result;
}

Expected<std::vector<std::int64_t>> resolve_split(const Node& node, std::int64_t dim,
                                                  const std::vector<std::int64_t>& split) {
  const std::size_t parts = node.outputs.size();
  if (parts == 0) return invalid_argument(node.describe(), ": Split needs at least one output");
  if (split.empty()) {
    if (dim % static_cast<std::int64_t>(parts) != 0) {
      return invalid_argument(node.describe(), ": axis of size ", dim,
                              " does not split evenly into ", parts, " outputs");
    }
    return std::vector<std::int64_t>(parts, dim / static_cast<std::int64_t>(parts));
  }
  if (split.size() != parts) {
    return invalid_argument(node.describe(), ": split has ", split.size(), " sizes for ", parts,
                            " outputs");
  }
  std::int64_t total = 0;
  for (std::int64_t s : split) {
    if (s < 0) return invalid_argument(node.describe(), ": split size ", s, " is negative");
    total += s;
  }
  if (total != dim) {
    return invalid_argument(node.describe(), ": split sizes add up to ", total,
                            ", the axis has size ", dim);
  }
  return split;
}

std::pair<std::int64_t, std::int64_t> shape_op_range(const Node& node, std::int64_t rank) {
  std::int64_t begin = node.attrs.get_int("start", 0);
  std::int64_t end = node.attrs.get_int("end", rank);
  if (begin < 0) begin += rank;
  if (end < 0) end += rank;
  begin = std::clamp<std::int64_t>(begin, 0, rank);
  end = std::clamp<std::int64_t>(end, 0, rank);
  return {begin, std::max(begin, end)};
}

Expected<std::int64_t> range_element_count(const Node& node, double start, double limit,
                                           double delta) {
  if (delta == 0) return invalid_argument(node.describe(), ": delta is 0");
  const double count = std::ceil((limit - start) / delta);
  if (!(count < 9.0e15)) {
    return invalid_argument(node.describe(), ": range of ", count, " elements");
  }
  return static_cast<std::int64_t>(std::max(count, 0.0));
}

}  // namespace voxrt::ir
