// Host-side launch parameters of the data-movement copies (see copy_plan.h).
#include "backends/cuda/copy_plan.h"

#include <algorithm>

namespace voxrt::backends::cuda {
namespace {

std::int64_t normalize_axis(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

}  // namespace

std::vector<std::int64_t> contiguous_strides(const Dims& dims) {
  std::vector<std::int64_t> strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

ops::StridedCopy transpose_copy(const Dims& in, const Dims& out,
                                std::span<const std::int64_t> perm_in) {
  std::vector<std::int64_t> perm(perm_in.begin(), perm_in.end());
  if (perm.empty()) {
    for (std::size_t i = 0; i < in.size(); ++i)
      perm.push_back(static_cast<std::int64_t>(in.size() - 1 - i));
  }
  const auto in_strides = contiguous_strides(in);
  const auto out_strides = contiguous_strides(out);
  ops::StridedCopy c;
  c.rank = static_cast<int>(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    c.dims[d] = out[d];
    c.in_strides[d] = in_strides[static_cast<std::size_t>(perm[d])];
    c.out_strides[d] = out_strides[d];
  }
  return c;
}

ops::StridedCopy slice_copy(const Dims& in, const Dims& out, std::span<const std::int64_t> starts,
                            std::span<const std::int64_t> axes,
                            std::span<const std::int64_t> steps) {
  const auto strides = contiguous_strides(in);
  const auto out_strides = contiguous_strides(out);
  ops::StridedCopy c;
  c.rank = static_cast<int>(in.size());
  for (std::size_t d = 0; d < in.size(); ++d) {
    c.dims[d] = out[d];
    c.in_strides[d] = strides[d];
    c.out_strides[d] = out_strides[d];
  }
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const auto axis = static_cast<std::size_t>(
        normalize_axis(axes.empty() ? static_cast<std::int64_t>(i) : axes[i], in.size()));
    const std::int64_t step = steps.empty() ? 1 : steps[i];
    const std::int64_t dim = in[axis];
    std::int64_t start = starts[i];
    if (start < 0) start += dim;
    start = step > 0 ? std::clamp<std::int64_t>(start, 0, dim)
                     : std::clamp<std::int64_t>(start, 0, dim - 1);
    c.in_offset += start * strides[axis];
    c.in_strides[axis] = strides[axis] * step;
  }
  return c;
}

std::optional<std::int64_t> contiguous_source_offset(const ops::StridedCopy& copy) {
  if (copy.out_offset != 0) return std::nullopt;
  for (int d = 0; d < copy.rank; ++d) {
    if (copy.dims[d] == 0) return std::nullopt;  // nothing to alias
    if (copy.dims[d] > 1 && copy.in_strides[d] != copy.out_strides[d]) return std::nullopt;
  }
  return copy.in_offset;
}

std::vector<PartCopy> concat_split_copies(bool concat, const Dims& whole,
                                          std::span<const Dims> parts, std::int64_t axis_in) {
  const auto axis = static_cast<std::size_t>(normalize_axis(axis_in, whole.size()));
  const auto whole_strides = contiguous_strides(whole);
  std::vector<PartCopy> copies;
  std::int64_t offset = 0;  // along the axis
  for (std::size_t p = 0; p < parts.size(); ++p) {
    const Dims& part = parts[p];
    const auto part_strides = contiguous_strides(part);
    PartCopy c;
    c.part = p;
    c.copy.rank = static_cast<int>(whole.size());
    for (std::size_t d = 0; d < whole.size(); ++d) {
      c.copy.dims[d] = part[d];
      c.copy.in_strides[d] = concat ? part_strides[d] : whole_strides[d];
      c.copy.out_strides[d] = concat ? whole_strides[d] : part_strides[d];
    }
    (concat ? c.copy.out_offset : c.copy.in_offset) = offset * whole_strides[axis];
    offset += part[axis];
    if (element_count(part) > 0) copies.push_back(c);
  }
  return copies;
}

std::optional<std::vector<std::int64_t>> concat_parts_in_place(const Dims& whole,
                                                               std::span<const Dims> parts,
                                                               std::int64_t axis) {
  const std::vector<PartCopy> copies = concat_split_copies(true, whole, parts, axis);
  if (copies.size() != parts.size()) return std::nullopt;  // an empty part
  std::vector<std::int64_t> offsets;
  for (const PartCopy& pc : copies) {
    const ops::StridedCopy& c = pc.copy;
    for (int d = 0; d < c.rank; ++d) {
      if (c.dims[d] > 1 && c.in_strides[d] != c.out_strides[d]) return std::nullopt;
    }
    offsets.push_back(c.out_offset);
  }
  return offsets;
}

ops::StridedCopy expand_copy(const Dims& in, const Dims& out) {
  const auto in_strides = contiguous_strides(in);
  const auto out_strides = contiguous_strides(out);
  const std::size_t lead = out.size() - in.size();
  ops::StridedCopy c;
  c.rank = static_cast<int>(out.size());
  for (std::size_t d = 0; d < out.size(); ++d) {
    c.dims[d] = out[d];
    c.out_strides[d] = out_strides[d];
    c.in_strides[d] = d < lead || in[d - lead] == 1 ? 0 : in_strides[d - lead];
  }
  return c;
}

}  // namespace voxrt::backends::cuda
