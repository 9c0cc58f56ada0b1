// Element types of tensors. The numeric values are stored in engine files: append only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>

namespace voxrt {

enum class DType : std::uint8_t {
  kF32 = 1,
  kF16 = 2,
  kBF16 = 3,
  kI8 = 4,
  kU8 = 5,
  kI32 = 6,
  kI64 = 7,
  kBool = 8,
};

std::size_t dtype_size_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> dtype_from_name(std::string_view name);
bool is_floating(DType dtype);

// IEEE half and bfloat16 conversions (round to nearest even), for Cast, weights and the GPU.
std::uint16_t float_to_half_bits(float value);
float half_bits_to_float(std::uint16_t bits);
std::uint16_t float_to_bfloat16_bits(float value);
float bfloat16_bits_to_float(std::uint16_t bits);

template <typename T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kF32;
};
template <>
struct DTypeOf<std::int8_t> {
  static constexpr DType value = DType::kI8;
};
template <>
struct DTypeOf<std::uint8_t> {
  static constexpr DType value = DType::kU8;
};
template <>
struct DTypeOf<std::int32_t> {
  static constexpr DType value = DType::kI32;
};
template <>
struct DTypeOf<std::int64_t> {
  static constexpr DType value = DType::kI64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};

}  // namespace voxrt
