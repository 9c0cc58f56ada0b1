// Numpy broadcasting for the elementwise kernels: the naive per-element index (reference
// tactic, test oracle) and a coalesced plan whose innermost dimension each input reads either
// contiguously (stride 1) or as one repeated value (stride 0), so inner loops vectorize.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "backends/kernel.h"
#include "core/thread_pool.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cpu::elementwise {

// Tactic ids of the elementwise family (stored in engine files: append only).
inline constexpr TacticId kTacticVectorized = 1;

// Offset in an input of dims `in` of output element `index` of dims `out` (naive: O(rank)).
inline std::int64_t broadcast_offset(const Dims& out, const Dims& in, std::int64_t index) {
  std::int64_t offset = 0, stride = 1;
  std::size_t d_in = in.size();
  for (std::size_t d = out.size(); d-- > 0;) {
    const std::int64_t coord = index % out[d];
    index /= out[d];
    if (d_in == 0) continue;
    --d_in;
    if (in[d_in] != 1) offset += coord * stride;
    stride *= in[d_in];
  }
  return offset;
}

struct BroadcastPlan {
  // Coalesced output dims (at least one).
  Dims dims;
  // strides[k][d]: element stride of input k along dims[d] (0 where it broadcasts).
  std::vector<Dims> strides;
  std::int64_t count = 0;
  std::int64_t inner() const { return dims.back(); }
};

BroadcastPlan make_broadcast_plan(const Dims& out, std::span<const Dims> inputs);

inline constexpr int kMaxBroadcastInputs = 8;

// Calls fn(out_offset, in_offsets, in_inner_strides, length) for the runs of output elements
// [begin, end) that lie in one innermost row; in_inner_strides[k] is 0 or 1.
template <typename Fn>
void for_each_segment(const BroadcastPlan& plan, std::int64_t begin, std::int64_t end, Fn&& fn) {
  const std::size_t inputs = plan.strides.size();
  const std::size_t rank = plan.dims.size();
  const std::int64_t inner = plan.inner();
  std::int64_t inner_strides[kMaxBroadcastInputs];
  std::int64_t row_offsets[kMaxBroadcastInputs];
  std::int64_t segment_offsets[kMaxBroadcastInputs];
  std::vector<std::int64_t> coords(rank, 0);
  std::int64_t row = begin / inner;
  std::int64_t col = begin % inner;
  for (std::size_t k = 0; k < inputs; ++k) {
    inner_strides[k] = plan.strides[k][rank - 1];
    row_offsets[k] = 0;
  }
  {
    std::int64_t rest = row;
    for (std::size_t d = rank - 1; d-- > 0;) {
      coords[d] = rest % plan.dims[d];
      rest /= plan.dims[d];
      for (std::size_t k = 0; k < inputs; ++k) row_offsets[k] += coords[d] * plan.strides[k][d];
    }
  }
  std::int64_t position = begin;
  while (position < end) {
    const std::int64_t length = std::min(inner - col, end - position);
    for (std::size_t k = 0; k < inputs; ++k) {
      segment_offsets[k] = row_offsets[k] + col * inner_strides[k];
    }
    fn(position, static_cast<const std::int64_t*>(segment_offsets),
       static_cast<const std::int64_t*>(inner_strides), length);
    position += length;
    col = 0;
    // Next row: advance the odometer over the outer dims.
    for (std::size_t d = rank - 1; d-- > 0;) {
      ++coords[d];
      for (std::size_t k = 0; k < inputs; ++k) row_offsets[k] += plan.strides[k][d];
      if (coords[d] < plan.dims[d]) break;
      for (std::size_t k = 0; k < inputs; ++k) row_offsets[k] -= coords[d] * plan.strides[k][d];
      coords[d] = 0;
    }
  }
}

// Elements per parallel task: big enough that scheduling costs little next to the work.
inline constexpr std::int64_t kParallelGrainElements = 16384;

// fn(begin, end) over [0, count), on the pool when the work is large enough.
template <typename Fn>
void parallel_elements(KernelContext& context, std::int64_t count, std::int64_t grain, Fn&& fn) {
  if (count <= 0) return;
  if (!context.pool || context.pool->threads() <= 1 || count < 2 * grain) {
    fn(std::int64_t{0}, count);
    return;
  }
  context.pool->parallel_for(count, grain, [&](std::int64_t b, std::int64_t e) { fn(b, e); });
}

}  // namespace voxrt::backends::cpu::elementwise
