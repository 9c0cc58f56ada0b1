// ScatterND, ScatterElements, GatherElements and Trilu (reference tactic only: exporters use them
// on small tensors, masks and position tables). Indices may be negative (counted from the end); an
// index out of range is an error, never a stray write.
#include <string>

#include "backends/cpu/data_movement/data_movement_kernels.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

enum class Reduction : std::uint8_t { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const ir::Node& node) {
  const std::string name = node.attrs.get_string("reduction", "none");
  if (name == "add") return Reduction::kAdd;
  if (name == "mul") return Reduction::kMul;
  if (name == "max") return Reduction::kMax;
  if (name == "min") return Reduction::kMin;
  return Reduction::kNone;
}

template <typename T>
void combine(T* dst, const T* src, std::int64_t count, Reduction reduction) {
  for (std::int64_t i = 0; i < count; ++i) {
    switch (reduction) {
      case Reduction::kNone: dst[i] = src[i]; break;
      case Reduction::kAdd: dst[i] = static_cast<T>(dst[i] + src[i]); break;
      case Reduction::kMul: dst[i] = static_cast<T>(dst[i] * src[i]); break;
      case Reduction::kMax: dst[i] = src[i] > dst[i] ? src[i] : dst[i]; break;
      case Reduction::kMin: dst[i] = src[i] < dst[i] ? src[i] : dst[i]; break;
    }
  }
}

// dst[0..count) (reduce)= src[0..count) for the element type `dtype`.
Status combine_elements(const std::string& where, DType dtype, std::uint8_t* dst,
                        const std::uint8_t* src, std::int64_t count, Reduction reduction) {
  if (reduction == Reduction::kNone) {
    std::memcpy(dst, src, static_cast<std::size_t>(count) * dtype_size_bytes(dtype));
    return Status::ok();
  }
  switch (dtype) {
    case DType::kF32:
      combine(reinterpret_cast<float*>(dst), reinterpret_cast<const float*>(src), count, reduction);
      return Status::ok();
    case DType::kI32:
      combine(reinterpret_cast<std::int32_t*>(dst), reinterpret_cast<const std::int32_t*>(src),
              count, reduction);
      return Status::ok();
    case DType::kI64:
      combine(reinterpret_cast<std::int64_t*>(dst), reinterpret_cast<const std::int64_t*>(src),
              count, reduction);
      return Status::ok();
    default: break;
  }
  return unsupported(where, ": a reduction on ", dtype_name(dtype), " (supported: f32, i32, i64)");
}

// An index into an axis of `extent`, negatives counted from the end; error when out of range.
Expected<std::int64_t> checked_index(const std::string& where, std::int64_t index,
                                     std::int64_t extent) {
  const std::int64_t resolved = index < 0 ? index + extent : index;
  if (resolved < 0 || resolved >= extent) {
    return invalid_argument(where, ": index ", index, " is out of range for an axis of ", extent);
  }
  return resolved;
}

class ScatterNDKernel final : public Kernel {
 public:
  explicit ScatterNDKernel(const ir::Node& node)
      : where_(node.describe()), reduction_(reduction_of(node)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& data = *inputs[0];
    const Tensor& indices = *inputs[1];
    const Tensor& updates = *inputs[2];
    Tensor& out = *outputs[0];
    std::memcpy(out.raw_data(), data.raw_data(), data.size_bytes());
    if (indices.rank() == 0) return invalid_argument(where_, ": indices must have rank >= 1");
    const auto k = static_cast<std::size_t>(indices.dims().back());
    if (k < 1 || k > data.rank()) {
      return invalid_argument(where_, ": indices ", dims_to_string(indices.dims()), " index ", k,
                              " dims of data ", dims_to_string(data.dims()));
    }
    const Dims strides = row_major_strides(data.dims());
    const std::int64_t slice = k == data.rank() ? 1 : strides[k - 1];
    const std::int64_t tuples = indices.element_count() / static_cast<std::int64_t>(k);
    if (updates.element_count() != tuples * slice) {
      return invalid_argument(where_, ": updates ", dims_to_string(updates.dims()), " hold ",
                              updates.element_count(), " elements, expected ", tuples * slice);
    }
    const std::size_t element_bytes = dtype_size_bytes(data.dtype());
    for (std::int64_t t = 0; t < tuples; ++t) {
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < k; ++d) {
        VOXRT_ASSIGN_OR_RETURN(
            const std::int64_t index,
            checked_index(where_, indices.element_as_i64(t * static_cast<std::int64_t>(k) + d),
                          data.dim(d)));
        offset += index * strides[d];
      }
      VOXRT_RETURN_IF_ERROR(combine_elements(
          where_, data.dtype(), bytes_of(out) + static_cast<std::size_t>(offset) * element_bytes,
          bytes_of(updates) + static_cast<std::size_t>(t * slice) * element_bytes, slice,
          reduction_));
    }
    return Status::ok();
  }

 private:
  std::string where_;
  Reduction reduction_;
};

// ScatterElements (with updates) and GatherElements (without): element p of the indices names
// the position along `axis`; the other coordinates are p's own.
class ElementsKernel final : public Kernel {
 public:
  ElementsKernel(const ir::Node& node, bool scatter)
      : where_(node.describe()),
        axis_(node.attrs.get_int("axis", 0)),
        reduction_(reduction_of(node)),
        scatter_(scatter) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& data = *inputs[0];
    const Tensor& indices = *inputs[1];
    Tensor& out = *outputs[0];
    const auto rank = static_cast<std::int64_t>(data.rank());
    if (indices.rank() != data.rank()) {
      return invalid_argument(where_, ": indices ", dims_to_string(indices.dims()),
                              " must have the rank of data ", dims_to_string(data.dims()));
    }
    if (axis_ < -rank || axis_ >= rank) {
      return invalid_argument(where_, ": axis ", axis_, " is out of range for rank ", rank);
    }
    const auto axis = static_cast<std::size_t>(axis_ < 0 ? axis_ + rank : axis_);
    for (std::size_t d = 0; d < data.rank(); ++d) {
      if (d != axis && indices.dim(d) > data.dim(d)) {
        return invalid_argument(where_, ": indices ", dims_to_string(indices.dims()),
                                " exceed data ", dims_to_string(data.dims()), " in dim ", d);
      }
    }
    const Tensor* updates = scatter_ ? inputs[2] : nullptr;
    if (updates && updates->dims() != indices.dims()) {
      return invalid_argument(where_, ": updates ", dims_to_string(updates->dims()),
                              " must have the shape of indices ", dims_to_string(indices.dims()));
    }
    const std::size_t element_bytes = dtype_size_bytes(data.dtype());
    if (scatter_) std::memcpy(out.raw_data(), data.raw_data(), data.size_bytes());
    const Dims strides = row_major_strides(data.dims());
    std::vector<std::int64_t> position;
    for (std::int64_t p = 0; p < indices.element_count(); ++p) {
      unravel_index(p, indices.dims(), position);
      VOXRT_ASSIGN_OR_RETURN(position[axis],
                             checked_index(where_, indices.element_as_i64(p), data.dim(axis)));
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < data.rank(); ++d) offset += position[d] * strides[d];
      if (scatter_) {
        VOXRT_RETURN_IF_ERROR(combine_elements(
            where_, data.dtype(), bytes_of(out) + static_cast<std::size_t>(offset) * element_bytes,
            bytes_of(*updates) + static_cast<std::size_t>(p) * element_bytes, 1, reduction_));
      } else {
        std::memcpy(bytes_of(out) + static_cast<std::size_t>(p) * element_bytes,
                    bytes_of(data) + static_cast<std::size_t>(offset) * element_bytes,
                    element_bytes);
      }
    }
    return Status::ok();
  }

 private:
  std::string where_;
  std::int64_t axis_;
  Reduction reduction_;
  bool scatter_;
};

// Trilu: keeps element (i, j) of every trailing matrix where j - i >= k (upper) or <= k (lower),
// zero bytes elsewhere (zero in every dtype).
class TriluKernel final : public Kernel {
 public:
  explicit TriluKernel(const ir::Node& node)
      : where_(node.describe()), upper_(node.attrs.get_int("upper", 1) != 0) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& x = *inputs[0];
    Tensor& out = *outputs[0];
    if (x.rank() < 2) return invalid_argument(where_, ": input must have rank >= 2");
    const std::int64_t k = inputs.size() > 1 && inputs[1] ? inputs[1]->element_as_i64(0) : 0;
    const std::int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
    const std::int64_t matrices = rows * cols == 0 ? 0 : x.element_count() / (rows * cols);
    const std::size_t element_bytes = dtype_size_bytes(x.dtype());
    for (std::int64_t m = 0; m < matrices; ++m) {
      for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < cols; ++j) {
          const bool keep = upper_ ? j - i >= k : j - i <= k;
          const std::size_t offset =
              static_cast<std::size_t>((m * rows + i) * cols + j) * element_bytes;
          if (keep) {
            std::memcpy(bytes_of(out) + offset, bytes_of(x) + offset, element_bytes);
          } else {
            std::memset(bytes_of(out) + offset, 0, element_bytes);
          }
        }
      }
    }
    return Status::ok();
  }

 private:
  std::string where_;
  bool upper_;
};

}  // namespace

std::unique_ptr<Kernel> make_scatter_nd_kernel(const ir::Node& node) {
  return std::make_unique<ScatterNDKernel>(node);
}
std::unique_ptr<Kernel> make_elements_kernel(const ir::Node& node) {
  return std::make_unique<ElementsKernel>(node, node.op == ir::OpKind::kScatterElements);
}
std::unique_ptr<Kernel> make_trilu_kernel(const ir::Node& node) {
  return std::make_unique<TriluKernel>(node);
}

}  // namespace voxrt::backends::cpu::data_movement
