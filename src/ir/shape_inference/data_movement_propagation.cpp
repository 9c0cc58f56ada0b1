#include "ir/shape_inference/data_movement_propagation.h"

#include <cstring>

namespace voxrt::ir {

namespace {

bool is_shape_dtype(DType dtype) {
  return dtype == DType::kI64 || dtype == DType::kI32;
}

// The input's data when it is a small i64/i32 tensor.
const Tensor* small_int_data(const ValueInfo& info) {
  if (!info.present || !info.data) return nullptr;
  const Tensor& t = *info.data;
  if (!is_shape_dtype(t.dtype()) || t.element_count() > kMaxPropagatedElements) return nullptr;
  return &t;
}

std::optional<Dims> small_known_dims(const SymShape& shape) {
  std::optional<Dims> dims = known_dims(shape);
  if (!dims || element_count(*dims) > kMaxPropagatedElements) return std::nullopt;
  return dims;
}

}  // namespace

Tensor int_tensor(DType dtype, const Dims& dims, const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::uninitialized(dtype, dims);
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kI32) {
      t.data<std::int32_t>()[i] = static_cast<std::int32_t>(values[i]);
    } else {
      t.data<std::int64_t>()[i] = values[i];
    }
  }
  return t;
}

std::optional<Tensor> propagate_reshape(const ValueInfo& input, const SymShape& shape) {
  const Tensor* data = small_int_data(input);
  std::optional<Dims> dims = small_known_dims(shape);
  if (!data || !dims || element_count(*dims) != data->element_count()) return std::nullopt;
  return int_tensor(data->dtype(), *dims, data->to_i64_vector());
}

std::optional<Tensor> propagate_concat(std::span<const ValueInfo> inputs, const SymShape& shape,
                                       std::int64_t axis) {
  std::optional<Dims> dims = small_known_dims(shape);
  if (!dims) return std::nullopt;
  std::vector<std::vector<std::int64_t>> parts;
  std::vector<std::int64_t> part_axis;
  for (const ValueInfo& v : inputs) {
    const Tensor* data = small_int_data(v);
    if (!data || data->dtype() != inputs[0].dtype || data->rank() != dims->size())
      return std::nullopt;
    parts.push_back(data->to_i64_vector());
    part_axis.push_back(data->dim(static_cast<std::size_t>(axis)));
  }
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::size_t i = 0; i < dims->size(); ++i) {
    if (static_cast<std::int64_t>(i) < axis) outer *= (*dims)[i];
    if (static_cast<std::int64_t>(i) > axis) inner *= (*dims)[i];
  }
  std::vector<std::int64_t> values;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::size_t p = 0; p < parts.size(); ++p) {
      const std::int64_t run = part_axis[p] * inner;
      for (std::int64_t i = 0; i < run; ++i)
        values.push_back(parts[p][static_cast<std::size_t>(o * run + i)]);
    }
  }
  if (static_cast<std::int64_t>(values.size()) != element_count(*dims)) return std::nullopt;
  return int_tensor(inputs[0].dtype, *dims, values);
}

std::optional<Tensor> propagate_slice(const ValueInfo& input, const SymShape& shape,
                                      const std::vector<SliceAxis>& axes) {
  const Tensor* data = small_int_data(input);
  std::optional<Dims> dims = small_known_dims(shape);
  if (!data || !dims || dims->size() != data->rank()) return std::nullopt;
  const Dims in_strides = row_major_strides(data->dims());
  const std::vector<std::int64_t> source = data->to_i64_vector();
  const std::int64_t total = element_count(*dims);
  std::vector<std::int64_t> values;
  for (std::int64_t flat = 0; flat < total; ++flat) {
    std::int64_t rest = flat;
    std::int64_t offset = 0;
    for (std::size_t d = dims->size(); d-- > 0;) {
      const std::int64_t j = rest % (*dims)[d];
      rest /= (*dims)[d];
      offset += (axes[d].start + j * axes[d].step) * in_strides[d];
    }
    values.push_back(source[static_cast<std::size_t>(offset)]);
  }
  return int_tensor(data->dtype(), *dims, values);
}

std::optional<Tensor> propagate_gather(const ValueInfo& input, const ValueInfo& indices,
                                       const SymShape& shape, std::int64_t axis) {
  const Tensor* data = small_int_data(input);
  const Tensor* index_data = small_int_data(indices);
  std::optional<Dims> dims = small_known_dims(shape);
  if (!data || !index_data || !dims) return std::nullopt;
  std::int64_t outer = 1;
  std::int64_t inner = 1;
  for (std::size_t i = 0; i < data->rank(); ++i) {
    if (static_cast<std::int64_t>(i) < axis) outer *= data->dim(i);
    if (static_cast<std::int64_t>(i) > axis) inner *= data->dim(i);
  }
  const std::int64_t axis_dim = data->dim(static_cast<std::size_t>(axis));
  const std::vector<std::int64_t> source = data->to_i64_vector();
  const std::vector<std::int64_t> picks = index_data->to_i64_vector();
  std::vector<std::int64_t> values;
  for (std::int64_t o = 0; o < outer; ++o) {
    for (std::int64_t pick : picks) {
      if (pick < 0) pick += axis_dim;
      if (pick < 0 || pick >= axis_dim) return std::nullopt;
      for (std::int64_t i = 0; i < inner; ++i) {
        values.push_back(source[static_cast<std::size_t>((o * axis_dim + pick) * inner + i)]);
      }
    }
  }
  if (static_cast<std::int64_t>(values.size()) != element_count(*dims)) return std::nullopt;
  return int_tensor(data->dtype(), *dims, values);
}

std::optional<Tensor> propagate_constant_of_shape(const Tensor* value, DType dtype,
                                                  const Dims& dims) {
  if (element_count(dims) > kMaxPropagatedElements) return std::nullopt;
  Tensor t = Tensor::zeros(dtype, dims);
  if (value) {
    const std::size_t element_bytes = dtype_size_bytes(dtype);
    auto* out = static_cast<std::uint8_t*>(t.raw_data());
    for (std::int64_t i = 0; i < t.element_count(); ++i) {
      std::memcpy(out + static_cast<std::size_t>(i) * element_bytes, value->raw_data(),
                  element_bytes);
    }
  }
  return t;
}

std::optional<Tensor> propagate_range(DType dtype, const Tensor& start, const Tensor& delta,
                                      std::int64_t count) {
  if (count > kMaxPropagatedElements) return std::nullopt;
  Tensor t = Tensor::uninitialized(dtype, {count});
  float accumulated = dtype == DType::kF32 ? start.data<float>()[0] : 0.0f;
  for (std::int64_t i = 0; i < count; ++i) {
    if (dtype == DType::kF32) {
      // Accumulated in float as onnxruntime and the Range kernel do, so folded ranges match.
      t.data<float>()[i] = accumulated;
      accumulated += delta.data<float>()[0];
    } else {
      const std::int64_t v = start.element_as_i64(0) + i * delta.element_as_i64(0);
      if (dtype == DType::kI32) {
        t.data<std::int32_t>()[i] = static_cast<std::int32_t>(v);
      } else {
        t.data<std::int64_t>()[i] = v;
      }
    }
  }
  return t;
}

}  // namespace voxrt::ir
