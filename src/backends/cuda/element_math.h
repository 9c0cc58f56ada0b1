// The per-element rules of the CUDA backend's typed elementwise kernels (typed_elementwise.cu):
// integer arithmetic, comparisons, Cast, Round, Sign and friends, written once for the host and
// the device. They follow ir/shape_inference/elementwise.h (the rules shape inference, constant
// folding and the CPU kernels use) exactly; tests/unit/cuda_element_math runs both on the edge
// cases (INT_MIN / -1, Mod signs, casts of NaN and out-of-range floats, halves in Round) so the two
// cannot drift apart. Plain C++17 with no CUDA include, so host-only unit tests compile it too.
// Half and bfloat16 values are computed in float by the kernels and rounded on the way out, as
// the CPU's HalfOp does.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#if defined(__CUDACC__)
#define VOXRT_HD __host__ __device__ __forceinline__
#else
#define VOXRT_HD inline
#endif

namespace voxrt::backends::cuda::element_math {

template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// Floating point to integer: truncate toward zero, saturate at the type's limits, NaN -> 0; to
// bool: != 0; to float or double: a plain conversion.
template <typename To, typename F>
VOXRT_HD To saturate(F value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != F(0);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else {
    if (!(value == value)) return 0;
    constexpr F lo = static_cast<F>(std::numeric_limits<To>::min());
    // max() of 32/64-bit types is not representable: compare against the power of two above it.
    constexpr F hi_exclusive = static_cast<F>(std::numeric_limits<To>::max() / 2 + 1) * F(2);
    if (value <= lo) return std::numeric_limits<To>::min();
    if (value >= hi_exclusive) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  }
}

// Cast between the non-half types (half and bfloat16 go through float in the kernels).
template <typename To, typename From>
VOXRT_HD To cast(From value) {
  if constexpr (std::is_floating_point_v<From>) {
    return saturate<To>(value);
  } else if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else {
    return static_cast<To>(value);  // integer -> integer wraps; integer/bool -> float rounds
  }
}

// ---- unary ----------------------------------------------------------------------------------

template <typename T>
VOXRT_HD T neg(T x) {
  if constexpr (kIsInt<T>)
    return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x));
  else
    return -x;
}
template <typename T>
VOXRT_HD T abs_value(T x) {
  if constexpr (kIsInt<T> && std::is_unsigned_v<T>)
    return x;
  else if constexpr (kIsInt<T>)
    return x < 0 ? neg(x) : x;
  else
    return std::fabs(x);
}
template <typename T>
VOXRT_HD T relu(T x) {
  return x > T(0) ? x : T(0);
}
template <typename T>
VOXRT_HD T sign(T x) {
  if (x > T(0)) return T(1);
  if constexpr (std::is_signed_v<T>) {
    if (x < T(0)) return T(-1);
  }
  return x;  // 0 stays 0, NaN stays NaN
}
// Halves to the even neighbour (ONNX Round), independent of the rounding mode.
VOXRT_HD float round_half_even(float x) {
  const float r = std::round(x);
  if (std::fabs(x - std::trunc(x)) == 0.5f) return 2.0f * std::round(x * 0.5f);
  return r;
}
// Clip with bounds given as doubles (the min/max inputs), converted to T as the CPU does.
template <typename T>
VOXRT_HD T clip(T x, double lo, double hi) {
  T lo_t, hi_t;
  if constexpr (std::is_floating_point_v<T>) {
    lo_t = static_cast<T>(lo);
    hi_t = static_cast<T>(hi);
  } else {
    lo_t = saturate<T>(lo);
    hi_t = saturate<T>(hi);
  }
  const T y = x < lo_t ? lo_t : x;
  return y > hi_t ? hi_t : y;
}

// ---- binary ---------------------------------------------------------------------------------

template <typename T>
VOXRT_HD T add(T a, T b) {
  if constexpr (kIsInt<T>)
    return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
  else
    return a + b;
}
template <typename T>
VOXRT_HD T sub(T a, T b) {
  if constexpr (kIsInt<T>)
    return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
  else
    return a - b;
}
template <typename T>
VOXRT_HD T mul(T a, T b) {
  if constexpr (kIsInt<T>)
    return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
  else
    return a * b;
}
// Integers: truncates toward zero; x / 0 = 0; INT_MIN / -1 wraps to INT_MIN.
template <typename T>
VOXRT_HD T div(T a, T b) {
  if constexpr (kIsInt<T>) {
    if (b == 0) return 0;
    if (std::is_signed_v<T> && b == T(-1)) return neg(a);
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}
// fmod: the sign of the dividend (C fmod); otherwise the sign of the divisor (Python). Mod by 0
// or -1 is 0 for integers.
template <typename T>
VOXRT_HD T mod(T a, T b, bool fmod) {
  if constexpr (kIsInt<T>) {
    if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
    T r = static_cast<T>(a % b);
    if constexpr (std::is_signed_v<T>) {
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    }
    return r;
  } else {
    T r = std::fmod(a, b);
    if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
    return r;
  }
}
// NaN propagates (numpy maximum / minimum).
template <typename T>
VOXRT_HD T max_value(T a, T b) {
  return (a > b || a != a) ? a : b;
}
template <typename T>
VOXRT_HD T min_value(T a, T b) {
  return (a < b || a != a) ? a : b;
}
// The result has the base's type. Integer exponents below 0: 1 for base 1, +-1 for base -1, 0
// otherwise; integer bases with a float exponent go through double and saturate.
template <typename T, typename E>
VOXRT_HD T power(T base, E exponent) {
  if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(std::pow(base, static_cast<T>(exponent)));
  } else if constexpr (kIsInt<E>) {
    if constexpr (std::is_signed_v<E>) {
      if (exponent < 0) {
        if (base == 1) return 1;
        if (base == T(-1)) return (exponent % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
    }
    Unsigned<T> result = 1, factor = static_cast<Unsigned<T>>(base);
    for (auto e = static_cast<std::uint64_t>(exponent); e != 0; e >>= 1) {
      if (e & 1u) result = static_cast<Unsigned<T>>(result * factor);
      factor = static_cast<Unsigned<T>>(factor * factor);
    }
    return static_cast<T>(result);
  } else {
    return saturate<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
  }
}

}  // namespace voxrt::backends::cuda::element_math
