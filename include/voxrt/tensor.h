// A dense, row-major tensor with shared ownership of its bytes. The bytes may belong to the
// tensor (64-byte aligned heap memory) or to something else kept alive by `keepalive` (an
// mmap-ed engine file, a caller's buffer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "voxrt/dtype.h"
#include "voxrt/status.h"

namespace voxrt {

using Dims = std::vector<std::int64_t>;

std::int64_t element_count(const Dims& dims);
std::string dims_to_string(const Dims& dims);  // "1x80x100"; "scalar" for rank 0
// Row-major strides in elements.
Dims row_major_strides(const Dims& dims);

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Tensor&) = default;
  Tensor& operator=(const Tensor&) = default;
  // A moved-from tensor is empty and invalid (not a shell still pointing at the bytes).
  Tensor(Tensor&& other) noexcept
      : dtype_(other.dtype_),
        dims_(std::move(other.dims_)),
        data_(std::exchange(other.data_, nullptr)),
        keepalive_(std::move(other.keepalive_)),
        valid_(std::exchange(other.valid_, false)) {
    other.dims_.clear();
  }
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) {
      dtype_ = other.dtype_;
      dims_ = std::move(other.dims_);
      other.dims_.clear();
      data_ = std::exchange(other.data_, nullptr);
      keepalive_ = std::move(other.keepalive_);
      valid_ = std::exchange(other.valid_, false);
    }
    return *this;
  }

  // Fresh, zero-filled, 64-byte aligned storage.
  static Tensor zeros(DType dtype, Dims dims);
  // Fresh storage, contents unspecified (cheaper when every element is written next).
  static Tensor uninitialized(DType dtype, Dims dims);
  // Wraps bytes owned elsewhere; `keepalive` (may be null) keeps them valid.
  static Tensor wrap(DType dtype, Dims dims, void* data, std::shared_ptr<void> keepalive);
  template <typename T>
  static Tensor from_vector(Dims dims, const std::vector<T>& values);
  static Tensor scalar_i64(std::int64_t value);
  static Tensor scalar_f32(float value);

  bool empty() const { return data_ == nullptr && element_count() != 0; }
  bool is_valid() const { return valid_; }
  DType dtype() const { return dtype_; }
  const Dims& dims() const { return dims_; }
  std::size_t rank() const { return dims_.size(); }
  std::int64_t dim(std::size_t axis) const { return dims_[axis]; }
  std::int64_t element_count() const { return voxrt::element_count(dims_); }
  std::size_t size_bytes() const {
    return static_cast<std::size_t>(element_count()) * dtype_size_bytes(dtype_);
  }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }
  template <typename T>
  std::span<T> span() {
    return {data<T>(), static_cast<std::size_t>(element_count())};
  }
  template <typename T>
  std::span<const T> span() const {
    return {data<T>(), static_cast<std::size_t>(element_count())};
  }

  // True when this tensor alone keeps its bytes alive (no copy, view or caller shares them), so
  // they may be overwritten without anyone noticing.
  bool holds_bytes_alone() const { return keepalive_ != nullptr && keepalive_.use_count() == 1; }

  // Same bytes, other dims (element counts must match).
  Expected<Tensor> reshaped(Dims dims) const;
  // A deep copy that owns its storage.
  Tensor clone() const;
  // Reads element i converted to double / int64, whatever the dtype (for shape values, tests).
  double element_as_double(std::int64_t index) const;
  std::int64_t element_as_i64(std::int64_t index) const;
  // Values of a rank-0/1 integer tensor, as used by shape inputs (Reshape, Slice, ...).
  std::vector<std::int64_t> to_i64_vector() const;

 private:
  DType dtype_ = DType::kF32;
  Dims dims_;
  void* data_ = nullptr;
  std::shared_ptr<void> keepalive_;
  bool valid_ = false;
};

template <typename T>
Tensor Tensor::from_vector(Dims dims, const std::vector<T>& values) {
  Tensor t = uninitialized(DTypeOf<T>::value, std::move(dims));
  if constexpr (std::is_same_v<T, bool>) {
    for (std::size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  } else if (!values.empty()) {  // memcpy from an empty vector's null data() is undefined
    std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}

}  // namespace voxrt
