// The per-element semantics of the elementwise ops, shared by shape inference (data propagation
// of small shape tensors), the FusedPointwise program and the CPU kernels, so a value folded at
// build time and one computed at run time come from the same formula.
//
// Integer rules (ONNX leaves these undefined; voxrt defines them so bad input never crashes):
//   - Add/Sub/Mul/Neg/Abs wrap around (two's complement), as numpy and onnxruntime do.
//   - Div truncates toward zero; x / 0 = 0; INT_MIN / -1 = INT_MIN (wraps).
//   - Mod by 0 = 0; Mod by -1 = 0.
//   - Pow with a negative integer exponent: 1 for base 1, +-1 for base -1, 0 otherwise.
//   - float -> integer casts truncate toward zero, saturate at the type's limits, NaN -> 0.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace voxrt::ir::elementwise {

template <typename T>
inline constexpr bool kIsInt = std::is_integral_v<T> && !std::is_same_v<T, bool>;

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

// Float (or double) to integer: truncate, saturate, NaN -> 0.
template <typename To, typename From>
inline To saturating_cast(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    if (!(value == value)) return 0;
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    // max() of 32/64-bit types is not representable: compare against the power of two above it.
    constexpr From hi_exclusive =
        static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * From(2);
    if (value <= lo) return std::numeric_limits<To>::min();
    if (value >= hi_exclusive) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

// ---- unary ----------------------------------------------------------------------------------
// kIntegerCapable: also defined for i32/i64 inputs (else only floating point).

struct CopyOp {
  static constexpr bool kIntegerCapable = true;
  template <typename T>
  T operator()(T x) const {
    return x;
  }
};
struct ReluOp {
  static constexpr bool kIntegerCapable = true;
  template <typename T>
  T operator()(T x) const {
    return x > T(0) ? x : T(0);
  }
};
struct LeakyReluOp {
  static constexpr bool kIntegerCapable = false;
  float alpha = 0.01f;
  float operator()(float x) const { return x >= 0.0f ? x : alpha * x; }
};
struct ClipOp {
  static constexpr bool kIntegerCapable = true;
  // Bounds in the input's type (the kernel reads them from the min/max inputs).
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  template <typename T>
  T operator()(T x) const {
    const T lo_t = lo_as<T>(), hi_t = hi_as<T>();
    T y = x < lo_t ? lo_t : x;
    return y > hi_t ? hi_t : y;
  }
  template <typename T>
  T lo_as() const {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(lo);
    else
      return saturating_cast<T>(lo);
  }
  template <typename T>
  T hi_as() const {
    if constexpr (std::is_floating_point_v<T>)
      return static_cast<T>(hi);
    else
      return saturating_cast<T>(hi);
  }
};
struct SigmoidOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const {
    // Both branches stay in range: exp of a non-positive number never overflows.
    if (x >= 0.0f) return 1.0f / (1.0f + std::exp(-x));
    const float e = std::exp(x);
    return e / (1.0f + e);
  }
};
struct TanhOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::tanh(x); }
};
struct ExpOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::exp(x); }
};
struct LogOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::log(x); }
};
struct SqrtOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::sqrt(x); }
};
struct NegOp {
  static constexpr bool kIntegerCapable = true;
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>)
      return static_cast<T>(Unsigned<T>(0) - static_cast<Unsigned<T>>(x));
    else
      return -x;
  }
};
struct AbsOp {
  static constexpr bool kIntegerCapable = true;
  template <typename T>
  T operator()(T x) const {
    if constexpr (kIsInt<T>)
      return x < 0 ? NegOp{}(x) : x;
    else
      return std::fabs(x);
  }
};
struct ReciprocalOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return 1.0f / x; }
};
struct ErfOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::erf(x); }
};
struct FloorOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::floor(x); }
};
struct CeilOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::ceil(x); }
};
struct RoundOp {
  static constexpr bool kIntegerCapable = false;
  // Halves go to the even neighbour (ONNX Round), independent of the FPU rounding mode.
  float operator()(float x) const {
    const float r = std::round(x);  // halves away from zero
    if (std::fabs(x - std::trunc(x)) == 0.5f) return 2.0f * std::round(x * 0.5f);
    return r;
  }
};
struct SignOp {
  static constexpr bool kIntegerCapable = true;
  template <typename T>
  T operator()(T x) const {
    if (x > T(0)) return T(1);
    if (x < T(0)) return T(-1);
    return x;  // 0 stays 0 (and NaN stays NaN)
  }
};
struct SoftplusOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const {
    return x > 0.0f ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
  }
};
struct EluOp {
  static constexpr bool kIntegerCapable = false;
  float alpha = 1.0f;
  float operator()(float x) const { return x < 0.0f ? alpha * std::expm1(x) : x; }
};
struct HardSigmoidOp {
  static constexpr bool kIntegerCapable = false;
  float alpha = 0.2f;
  float beta = 0.5f;
  float operator()(float x) const {
    const float y = alpha * x + beta;
    return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
  }
};
struct SinOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::sin(x); }
};
struct CosOp {
  static constexpr bool kIntegerCapable = false;
  float operator()(float x) const { return std::cos(x); }
};
struct NotOp {
  bool operator()(bool x) const { return !x; }
};

// ---- binary ---------------------------------------------------------------------------------

struct AddOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) + static_cast<Unsigned<T>>(b));
    } else {
      return a + b;
    }
  }
};
struct SubOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) - static_cast<Unsigned<T>>(b));
    } else {
      return a - b;
    }
  }
};
struct MulOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      return static_cast<T>(static_cast<Unsigned<T>>(a) * static_cast<Unsigned<T>>(b));
    } else {
      return a * b;
    }
  }
};
struct DivOp {
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0) return 0;
      if (std::is_signed_v<T> && b == T(-1)) return NegOp{}(a);  // INT_MIN / -1 wraps
      return a / b;
    } else {
      return a / b;
    }
  }
};
struct ModOp {
  // ONNX fmod=1: the sign of the dividend (C fmod); fmod=0: the sign of the divisor (Python).
  bool fmod = false;
  template <typename T>
  T operator()(T a, T b) const {
    if constexpr (kIsInt<T>) {
      if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
      T r = static_cast<T>(a % b);
      if (!fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
      return r;
    } else {
      T r = std::fmod(a, b);
      if (!fmod && r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    }
  }
};
// Max/Min propagate NaN (numpy maximum/minimum).
struct MaxOp {
  template <typename T>
  T operator()(T a, T b) const {
    return (a > b || a != a) ? a : b;
  }
};
struct MinOp {
  template <typename T>
  T operator()(T a, T b) const {
    return (a < b || a != a) ? a : b;
  }
};
struct PowOp {
  // The result has the base's type; the exponent may have another type (ONNX Pow's T and T1).
  template <typename T, typename E>
  T operator()(T base, E exponent) const {
    if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(std::pow(base, static_cast<T>(exponent)));
    } else if constexpr (kIsInt<E>) {
      if (exponent < 0) {
        if (base == 1) return 1;
        if (base == T(-1)) return (exponent % 2 == 0) ? T(1) : T(-1);
        return 0;
      }
      Unsigned<T> result = 1, factor = static_cast<Unsigned<T>>(base);
      for (auto e = static_cast<std::uint64_t>(exponent); e != 0; e >>= 1) {
        if (e & 1u) result = static_cast<Unsigned<T>>(result * factor);
        factor = static_cast<Unsigned<T>>(factor * factor);
      }
      return static_cast<T>(result);
    } else {
      return saturating_cast<T>(std::pow(static_cast<double>(base), static_cast<double>(exponent)));
    }
  }
};

struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};
struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessOrEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct AndOp {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrOp {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct XorOp {
  bool operator()(bool a, bool b) const { return a != b; }
};

}  // namespace voxrt::ir::elementwise
