// Private interface of the CPU reduction family (Reduce*, ArgMax, Softmax/LogSoftmax,
// LayerNormalization, BatchNormalization, CumSum, TopK, InstanceNormalization): the registry
// picks a factory per op and tactic.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/kernel.h"

namespace voxrt::backends::cpu::reduction {

// Tactic ids of this family (stored in engine files: append only).
inline constexpr TacticId kVectorizedTactic = 1;

// Elements a task should cover at least before the work is split across threads.
inline constexpr std::int64_t kMinElementsPerTask = 16384;

// A reduction seen as [outer, reduce, inner]: every output element (o, i) combines the `reduce`
// input elements x[o, r, i]. Reductions whose axes are not one block have no such form.
struct BlockedLayout {
  std::int64_t outer = 1;
  std::int64_t reduce = 1;
  std::int64_t inner = 1;
};

// Which axes of `dims` a Reduce* node reduces: its axes input (null = absent), with empty axes
// meaning all axes unless noop_with_empty_axes. `where` names the node in errors.
Expected<std::vector<bool>> reduced_axes(const std::string& where, const Dims& dims,
                                         const Tensor* axes, bool noop_with_empty_axes);
// The [outer, reduce, inner] form of a reduction, once size-1 dims are dropped and neighbouring
// dims of the same kind are merged; nullopt when reduced and kept dims interleave.
std::optional<BlockedLayout> blocked_layout(const Dims& dims, const std::vector<bool>& reduced);
// `axis` in [-rank, rank) made non-negative; error otherwise.
Expected<std::int64_t> normalized_axis(const std::string& where, std::int64_t axis,
                                       std::size_t rank);
// The form of a reduction over the single axis `axis` (already normalized).
BlockedLayout single_axis_layout(const Dims& dims, std::int64_t axis);
// How many consecutive items (each `item_elements` long) one parallel task should take.
std::int64_t task_grain(std::int64_t item_elements);

// Which element types each op's kernels handle (both tactics handle the same ones).
bool reduce_supports(const ir::Node& node);
bool softmax_supports(const ir::Node& node);
bool layer_norm_supports(const ir::Node& node);
bool batch_norm_supports(const ir::Node& node);
// CumSum, TopK and InstanceNormalization have the reference tactic only.
bool scan_and_top_k_supports(const ir::Node& node);
bool instance_norm_supports(const ir::Node& node);

// Reduce* and ArgMax.
std::unique_ptr<Kernel> make_reference_reduce_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_vectorized_reduce_kernel(const ir::Node& node);
// Softmax and LogSoftmax.
std::unique_ptr<Kernel> make_softmax_kernel(const ir::Node& node, TacticId tactic);
std::unique_ptr<Kernel> make_layer_norm_kernel(const ir::Node& node, TacticId tactic);
std::unique_ptr<Kernel> make_batch_norm_kernel(const ir::Node& node, TacticId tactic);
std::unique_ptr<Kernel> make_scan_or_top_k_kernel(const ir::Node& node);
std::unique_ptr<Kernel> make_instance_norm_kernel(const ir::Node& node);

}  // namespace voxrt::backends::cpu::reduction
