// Host-side launch parameters of the data-movement copies (Transpose, Slice, Concat, Split,
// Expand): dims in, StridedCopy out. No CUDA headers and no device pointers, so the index
// arithmetic is unit-tested on the CPU (tests/unit/cuda_copy_plan) without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backends/cuda/strided_copy.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cuda {

std::vector<std::int64_t> contiguous_strides(const Dims& dims);

// Transpose `in` to `out` (out[d] = in[perm[d]]); an empty perm reverses the axes.
ops::StridedCopy transpose_copy(const Dims& in, const Dims& out,
                                std::span<const std::int64_t> perm);

// Slice `in` to `out` (out dims from shape inference): ONNX starts (negative: + dim, clamped),
// axes (empty: 0, 1, ...; negative: + rank) and steps (empty: 1).
ops::StridedCopy slice_copy(const Dims& in, const Dims& out, std::span<const std::int64_t> starts,
                            std::span<const std::int64_t> axes,
                            std::span<const std::int64_t> steps);

// Concat (parts into whole) or Split (whole into parts) along `axis` (negative: + rank): one
// copy per part that has elements, `part` naming its index in `parts`. Every part must have the
// whole's rank; parts are laid out along the axis in order.
struct PartCopy {
  std::size_t part = 0;
  ops::StridedCopy copy;
};
std::vector<PartCopy> concat_split_copies(bool concat, const Dims& whole,
                                          std::span<const Dims> parts, std::int64_t axis);

// When the copy's output is one contiguous run of its input (every axis of extent > 1 keeps the
// output's contiguous stride, as in a Slice of whole rows along the outermost sliced axis), the
// run's first input element; the executor then aliases the output instead of copying it.
std::optional<std::int64_t> contiguous_source_offset(const ops::StridedCopy& copy);

// When every part of a Concat is one contiguous run of the whole (the axes before `axis` have
// extent 1 in the whole, as for stacked per-layer states), each part's first element in the
// whole; the executor then lets the parts' producers write there and copies nothing.
std::optional<std::vector<std::int64_t>> concat_parts_in_place(const Dims& whole,
                                                               std::span<const Dims> parts,
                                                               std::int64_t axis);

// Expand (numpy broadcast of `in` to `out`).
ops::StridedCopy expand_copy(const Dims& in, const Dims& out);

}  // namespace voxrt::backends::cuda
