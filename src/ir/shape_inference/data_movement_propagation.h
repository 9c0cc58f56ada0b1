// Data propagation for data-movement shape inference: when the inputs of Reshape, Concat, Gather,
// Slice, ... are small integer tensors with known contents (shape computations), the outputs'
// contents are computed here, so constant folding needs no kernel for them.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ir/shape_inference.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::ir {

// Only tensors of at most this many elements are propagated (shape vectors, not activations).
inline constexpr std::int64_t kMaxPropagatedElements = 64;

// An i64 or i32 tensor holding `values`.
Tensor int_tensor(DType dtype, const Dims& dims, const std::vector<std::int64_t>& values);

// Each returns nullopt unless every input it reads has small integer data and `shape` is known.
std::optional<Tensor> propagate_reshape(const ValueInfo& input, const SymShape& shape);
std::optional<Tensor> propagate_concat(std::span<const ValueInfo> inputs, const SymShape& shape,
                                       std::int64_t axis);
std::optional<Tensor> propagate_slice(const ValueInfo& input, const SymShape& shape,
                                      const std::vector<SliceAxis>& axes);
std::optional<Tensor> propagate_gather(const ValueInfo& input, const ValueInfo& indices,
                                       const SymShape& shape, std::int64_t axis);
// ConstantOfShape (any dtype) and Range (i32/i64/f32) when the result is small.
std::optional<Tensor> propagate_constant_of_shape(const Tensor* value, DType dtype,
                                                  const Dims& dims);
std::optional<Tensor> propagate_range(DType dtype, const Tensor& start, const Tensor& delta,
                                      std::int64_t count);

}  // namespace voxrt::ir
