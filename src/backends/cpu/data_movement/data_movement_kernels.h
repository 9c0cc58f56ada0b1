// Internal to the CPU data-movement family: one factory per op group and the byte-level helpers
// they share. Every kernel moves bytes, so every dtype works; tactic 0 walks elements one at a
// time (the test oracle), tactic 1 ("blocked") copies contiguous runs and tiles.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::data_movement {

inline constexpr TacticId kBlockedTactic = 1;

// Reshape, Flatten, Squeeze, Unsqueeze: the bytes do not change.
std::unique_ptr<Kernel> make_copy_kernel();
std::unique_ptr<Kernel> make_transpose_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_concat_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_split_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_slice_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_gather_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_pad_kernel(const ir::Node& node, bool blocked);
std::unique_ptr<Kernel> make_expand_kernel(bool blocked);
std::unique_ptr<Kernel> make_tile_kernel(bool blocked);
std::unique_ptr<Kernel> make_shape_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_size_kernel();
std::unique_ptr<Kernel> make_constant_of_shape_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_range_kernel();
// Element indexing (indexing.cpp): reference tactic only.
std::unique_ptr<Kernel> make_scatter_nd_kernel(const ir::Node& node);
// ScatterElements and GatherElements.
std::unique_ptr<Kernel> make_elements_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_trilu_kernel(const ir::Node& node);

// The node's op, name and attributes without its Value pointers, for kernels that resolve
// attributes against run-time dims (the graph may be gone by then).
inline ir::Node detached_node(const ir::Node& node) {
  ir::Node copy;
  copy.op = node.op;
  copy.name = node.name;
  copy.attrs = node.attrs;
  copy.opset = node.opset;
  copy.outputs.assign(node.outputs.size(), nullptr);
  return copy;
}

// Splits [0, count) over the pool so that each part moves roughly 64 KiB or more.
inline void parallel_rows(KernelContext& context, std::int64_t count, std::int64_t bytes_per_row,
                          const std::function<void(std::int64_t, std::int64_t)>& fn) {
  constexpr std::int64_t kBytesPerPart = 64 * 1024;
  const std::int64_t grain =
      std::max<std::int64_t>(1, kBytesPerPart / std::max<std::int64_t>(bytes_per_row, 1));
  context.pool->parallel_for(count, grain, fn);
}

// Writes `count` copies of the `element_bytes`-byte pattern at `value` to `dst`.
inline void fill_elements(std::uint8_t* dst, const std::uint8_t* value, std::size_t element_bytes,
                          std::int64_t count) {
  if (count <= 0) return;
  std::memcpy(dst, value, element_bytes);
  // Doubling copies: log(count) memcpy calls instead of count.
  std::size_t filled = element_bytes;
  const std::size_t total = element_bytes * static_cast<std::size_t>(count);
  while (filled < total) {
    const std::size_t chunk = std::min(filled, total - filled);
    std::memcpy(dst + filled, dst, chunk);
    filled += chunk;
  }
}

// Row-major multi-index of `flat` in `dims`.
inline void unravel_index(std::int64_t flat, const Dims& dims, std::vector<std::int64_t>& index) {
  index.resize(dims.size());
  for (std::size_t d = dims.size(); d-- > 0;) {
    index[d] = dims[d] ? flat % dims[d] : 0;
    flat = dims[d] ? flat / dims[d] : 0;
  }
}

inline const std::uint8_t* bytes_of(const Tensor& t) {
  return static_cast<const std::uint8_t*>(t.raw_data());
}
inline std::uint8_t* bytes_of(Tensor& t) {
  return static_cast<std::uint8_t*>(t.raw_data());
}

}  // namespace voxrt::backends::cpu::data_movement
