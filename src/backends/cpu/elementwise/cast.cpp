// Cast between every pair of voxrt dtypes. f16/bf16 go through f32 with the dtype.h helpers
// (round to nearest even); float -> integer truncates and saturates, NaN -> 0
// (ir/shape_inference/elementwise.h); integer -> integer wraps; x -> bool is x != 0.
#include <cstring>

#include "backends/cpu/elementwise/elementwise_kernels.h"
#include "ir/shape_inference/elementwise.h"

namespace voxrt::backends::cpu::elementwise {
namespace {

template <DType D>
struct Storage;
template <>
struct Storage<DType::kF32> {
  using type = float;
};
template <>
struct Storage<DType::kF16> {
  using type = std::uint16_t;
};
template <>
struct Storage<DType::kBF16> {
  using type = std::uint16_t;
};
template <>
struct Storage<DType::kI8> {
  using type = std::int8_t;
};
template <>
struct Storage<DType::kU8> {
  using type = std::uint8_t;
};
template <>
struct Storage<DType::kI32> {
  using type = std::int32_t;
};
template <>
struct Storage<DType::kI64> {
  using type = std::int64_t;
};
template <>
struct Storage<DType::kBool> {
  using type = bool;
};

template <DType From, DType To>
typename Storage<To>::type convert(typename Storage<From>::type v) {
  if constexpr (From == DType::kF16) {
    return convert<DType::kF32, To>(half_bits_to_float(v));
  } else if constexpr (From == DType::kBF16) {
    return convert<DType::kF32, To>(bfloat16_bits_to_float(v));
  } else if constexpr (To == DType::kF16) {
    return float_to_half_bits(convert<From, DType::kF32>(v));
  } else if constexpr (To == DType::kBF16) {
    return float_to_bfloat16_bits(convert<From, DType::kF32>(v));
  } else {
    return ir::elementwise::saturating_cast<typename Storage<To>::type>(v);
  }
}

template <DType From, DType To>
KernelFn cast_fn(bool fast) {
  return [fast](std::span<const Tensor* const> in, std::span<Tensor* const> out,
                KernelContext& context) {
    using Src = typename Storage<From>::type;
    using Dst = typename Storage<To>::type;
    const Src* src = in[0]->data<Src>();
    Dst* dst = out[0]->data<Dst>();
    const std::int64_t count = in[0]->element_count();
    if constexpr (From == To) {
      if (count) std::memcpy(dst, src, in[0]->size_bytes());
      return Status::ok();
    }
    auto loop = [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) dst[i] = convert<From, To>(src[i]);
    };
    if (fast) {
      parallel_elements(context, count, kParallelGrainElements, loop);
    } else {
      loop(0, count);
    }
    return Status::ok();
  };
}

template <DType From>
Expected<KernelFn> cast_from(const ir::Node& node, DType to, bool fast) {
  switch (to) {
    case DType::kF32: return cast_fn<From, DType::kF32>(fast);
    case DType::kF16: return cast_fn<From, DType::kF16>(fast);
    case DType::kBF16: return cast_fn<From, DType::kBF16>(fast);
    case DType::kI8: return cast_fn<From, DType::kI8>(fast);
    case DType::kU8: return cast_fn<From, DType::kU8>(fast);
    case DType::kI32: return cast_fn<From, DType::kI32>(fast);
    case DType::kI64: return cast_fn<From, DType::kI64>(fast);
    case DType::kBool: return cast_fn<From, DType::kBool>(fast);
  }
  return unsupported(node.describe(), ": cannot cast to dtype id ", static_cast<int>(to));
}

}  // namespace

Expected<KernelFn> make_cast_fn(const ir::Node& node, bool fast) {
  VOXRT_ASSIGN_OR_RETURN(DType from, input_dtype(node, 0));
  const std::int64_t to_id = node.attrs.get_int("to", -1);
  if (to_id < 0 || to_id > 255 || dtype_size_bytes(static_cast<DType>(to_id)) == 0) {
    return invalid_argument(node.describe(), ": attribute 'to' = ", to_id, " is not a voxrt dtype");
  }
  const auto to = static_cast<DType>(to_id);
  switch (from) {
    case DType::kF32: return cast_from<DType::kF32>(node, to, fast);
    case DType::kF16: return cast_from<DType::kF16>(node, to, fast);
    case DType::kBF16: return cast_from<DType::kBF16>(node, to, fast);
    case DType::kI8: return cast_from<DType::kI8>(node, to, fast);
    case DType::kU8: return cast_from<DType::kU8>(node, to, fast);
    case DType::kI32: return cast_from<DType::kI32>(node, to, fast);
    case DType::kI64: return cast_from<DType::kI64>(node, to, fast);
    case DType::kBool: return cast_from<DType::kBool>(node, to, fast);
  }
  return unsupported(node.describe(), ": cannot cast from dtype id ", static_cast<int>(from));
}

}  // namespace voxrt::backends::cpu::elementwise
