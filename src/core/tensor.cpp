#include "voxrt/tensor.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace voxrt {

std::int64_t element_count(const Dims& dims) {
  std::int64_t count = 1;
  for (std::int64_t d : dims) count *= d;
  return count;
}

std::string dims_to_string(const Dims& dims) {
  if (dims.empty()) return "scalar";
  std::string out;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) out += 'x';
    out += std::to_string(dims[i]);
  }
  return out;
}

Dims row_major_strides(const Dims& dims) {
  Dims strides(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

namespace {
constexpr std::size_t kAlignmentBytes = 64;

std::shared_ptr<void> allocate_aligned(std::size_t bytes) {
  // Round up so that vector kernels may read whole 64-byte lines past the last element.
  const std::size_t rounded =
      ((bytes + kAlignmentBytes - 1) / kAlignmentBytes + 1) * kAlignmentBytes;
  void* p = std::aligned_alloc(kAlignmentBytes, rounded);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}
}  // namespace

Tensor Tensor::uninitialized(DType dtype, Dims dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.keepalive_ = allocate_aligned(t.size_bytes());
  t.data_ = t.keepalive_.get();
  t.valid_ = true;
  return t;
}

Tensor Tensor::zeros(DType dtype, Dims dims) {
  Tensor t = uninitialized(dtype, std::move(dims));
  std::memset(t.data_, 0, t.size_bytes());
  return t;
}

Tensor Tensor::wrap(DType dtype, Dims dims, void* data, std::shared_ptr<void> keepalive) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.data_ = data;
  t.keepalive_ = std::move(keepalive);
  t.valid_ = true;
  return t;
}

Tensor Tensor::scalar_i64(std::int64_t value) {
  Tensor t = uninitialized(DType::kI64, {});
  *t.data<std::int64_t>() = value;
  return t;
}

Tensor Tensor::scalar_f32(float value) {
  Tensor t = uninitialized(DType::kF32, {});
  *t.data<float>() = value;
  return t;
}

Expected<Tensor> Tensor::reshaped(Dims dims) const {
  if (voxrt::element_count(dims) != element_count()) {
    return invalid_argument("reshape from ", dims_to_string(dims_), " to ", dims_to_string(dims),
                            ": element counts differ");
  }
  Tensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::clone() const {
  Tensor t = uninitialized(dtype_, dims_);
  if (size_bytes()) std::memcpy(t.data_, data_, size_bytes());
  return t;
}

double Tensor::element_as_double(std::int64_t i) const {
  switch (dtype_) {
    case DType::kF32: return data<float>()[i];
    case DType::kF16: return half_bits_to_float(data<std::uint16_t>()[i]);
    case DType::kBF16: return bfloat16_bits_to_float(data<std::uint16_t>()[i]);
    case DType::kI8: return data<std::int8_t>()[i];
    case DType::kU8: return data<std::uint8_t>()[i];
    case DType::kI32: return data<std::int32_t>()[i];
    case DType::kI64: return static_cast<double>(data<std::int64_t>()[i]);
    case DType::kBool: return data<bool>()[i] ? 1.0 : 0.0;
  }
  return 0.0;
}

std::int64_t Tensor::element_as_i64(std::int64_t i) const {
  switch (dtype_) {
    case DType::kI64: return data<std::int64_t>()[i];
    case DType::kI32: return data<std::int32_t>()[i];
    case DType::kI8: return data<std::int8_t>()[i];
    case DType::kU8: return data<std::uint8_t>()[i];
    case DType::kBool: return data<bool>()[i] ? 1 : 0;
    default: return static_cast<std::int64_t>(element_as_double(i));
  }
}

std::vector<std::int64_t> Tensor::to_i64_vector() const {
  std::vector<std::int64_t> out(static_cast<std::size_t>(element_count()));
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = element_as_i64(static_cast<std::int64_t>(i));
  return out;
}

}  // namespace voxrt
