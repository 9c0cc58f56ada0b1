// element_math.h (the CUDA kernels' per-element rules) must give what ir::elementwise gives (the
// IR's, the CPU's and constant folding's), bit for bit, on the cases where the rules are chosen
// rather than obvious: integer division and modulo signs, INT_MIN / -1, division by zero,
// negative and large exponents, casts of NaN, infinities and out-of-range floats, Round's halves,
// NaN through Max / Min, and Clip bounds beyond the type.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "backends/cuda/element_math.h"
#include "ir/shape_inference/elementwise.h"

namespace voxrt {
namespace {

namespace em = backends::cuda::element_math;
namespace ew = ir::elementwise;

template <typename T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) && std::isnan(b)) return true;
    return std::memcmp(&a, &b, sizeof(T)) == 0;
  } else {
    return a == b;
  }
}

template <typename T>
std::vector<T> integer_cases() {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0), T(1), T(2), T(3), T(7), L::max(), T(L::max() - 1), L::min()};
  if constexpr (std::is_signed_v<T>) {
    for (T x : {T(-1), T(-2), T(-3), T(-7), T(L::min() + 1)}) v.push_back(x);
  }
  return v;
}

std::vector<float> float_cases() {
  const float inf = std::numeric_limits<float>::infinity();
  return {0.0f,          -0.0f,         0.5f,          -0.5f,         1.5f,
          -1.5f,         2.5f,          -2.5f,         3.0f,          -7.25f,
          1e-30f,        1e30f,         -1e30f,        inf,           -inf,
          NAN,           0.49999997f,   2147483520.0f, 2147483648.0f, -2147483904.0f,
          9.2233715e18f, -9.223372e18f, 3e38f,         255.5f,        128.0f,
          -129.0f};
}

template <typename T>
void check_integer_binary() {
  const auto xs = integer_cases<T>();
  for (T a : xs) {
    for (T b : xs) {
      SCOPED_TRACE(testing::Message() << +a << " op " << +b);
      EXPECT_EQ(em::add(a, b), ew::AddOp{}(a, b));
      EXPECT_EQ(em::sub(a, b), ew::SubOp{}(a, b));
      EXPECT_EQ(em::mul(a, b), ew::MulOp{}(a, b));
      EXPECT_EQ(em::div(a, b), ew::DivOp{}(a, b));
      EXPECT_EQ(em::mod(a, b, false), ew::ModOp{false}(a, b));
      EXPECT_EQ(em::mod(a, b, true), ew::ModOp{true}(a, b));
      EXPECT_EQ(em::max_value(a, b), ew::MaxOp{}(a, b));
      EXPECT_EQ(em::min_value(a, b), ew::MinOp{}(a, b));
    }
    EXPECT_EQ(em::neg(a), ew::NegOp{}(a));
    EXPECT_EQ(em::abs_value(a), ew::AbsOp{}(a));
    EXPECT_EQ(em::relu(a), ew::ReluOp{}(a));
    EXPECT_EQ(em::sign(a), ew::SignOp{}(a));
  }
}

TEST(CudaElementMath, IntegerArithmeticMatchesTheIr) {
  check_integer_binary<std::int8_t>();
  check_integer_binary<std::uint8_t>();
  check_integer_binary<std::int32_t>();
  check_integer_binary<std::int64_t>();
}

TEST(CudaElementMath, IntegerPowerMatchesTheIr) {
  for (std::int64_t base : {0, 1, -1, 2, -2, 3, 10, 1 << 20}) {
    for (std::int64_t e : {-3, -2, -1, 0, 1, 2, 3, 31, 63, 64}) {
      SCOPED_TRACE(testing::Message() << base << " ^ " << e);
      EXPECT_EQ(em::power(base, e), ew::PowOp{}(base, e));
      EXPECT_EQ(em::power(static_cast<std::int32_t>(base), static_cast<std::int32_t>(e)),
                ew::PowOp{}(static_cast<std::int32_t>(base), static_cast<std::int32_t>(e)));
    }
    for (float e : {-1.0f, 0.5f, 2.0f, 40.0f, 70.0f, NAN}) {
      SCOPED_TRACE(testing::Message() << base << " ^ " << e);
      EXPECT_EQ(em::power(base, e), ew::PowOp{}(base, e));
      EXPECT_EQ(em::power(static_cast<std::int32_t>(base), e),
                ew::PowOp{}(static_cast<std::int32_t>(base), e));
    }
  }
}

TEST(CudaElementMath, FloatOpsMatchTheIr) {
  const auto xs = float_cases();
  for (float a : xs) {
    for (float b : xs) {
      SCOPED_TRACE(testing::Message() << a << " op " << b);
      EXPECT_TRUE(same(em::mod(a, b, false), ew::ModOp{false}(a, b)));
      EXPECT_TRUE(same(em::mod(a, b, true), ew::ModOp{true}(a, b)));
      EXPECT_TRUE(same(em::max_value(a, b), ew::MaxOp{}(a, b)));
      EXPECT_TRUE(same(em::min_value(a, b), ew::MinOp{}(a, b)));
      EXPECT_TRUE(same(em::div(a, b), ew::DivOp{}(a, b)));
    }
    SCOPED_TRACE(testing::Message() << a);
    EXPECT_TRUE(same(em::round_half_even(a), ew::RoundOp{}(a)));
    EXPECT_TRUE(same(em::sign(a), ew::SignOp{}(a)));
    EXPECT_TRUE(same(em::abs_value(a), ew::AbsOp{}(a)));
  }
}

template <typename To>
void check_casts_from_float() {
  for (float v : float_cases()) {
    SCOPED_TRACE(testing::Message() << v);
    EXPECT_EQ(em::cast<To>(v), ew::saturating_cast<To>(v));
  }
}

TEST(CudaElementMath, CastsMatchTheIr) {
  check_casts_from_float<std::int8_t>();
  check_casts_from_float<std::uint8_t>();
  check_casts_from_float<std::int32_t>();
  check_casts_from_float<std::int64_t>();
  check_casts_from_float<bool>();
  for (std::int64_t v : integer_cases<std::int64_t>()) {
    SCOPED_TRACE(v);
    EXPECT_EQ(em::cast<std::int32_t>(v), ew::saturating_cast<std::int32_t>(v));
    EXPECT_EQ(em::cast<std::uint8_t>(v), ew::saturating_cast<std::uint8_t>(v));
    EXPECT_EQ(em::cast<bool>(v), ew::saturating_cast<bool>(v));
    EXPECT_TRUE(same(em::cast<float>(v), ew::saturating_cast<float>(v)));
  }
  EXPECT_EQ(em::cast<std::int64_t>(true), 1);
  EXPECT_EQ(em::cast<float>(false), 0.0f);
}

TEST(CudaElementMath, ClipBoundsSaturateAsTheIrDoes) {
  for (double lo : {-1e300, -3.5, 0.0, 100.0, 1e20}) {
    for (double hi : {-2.0, 0.5, 300.0, 1e300}) {
      ew::ClipOp op{lo, hi};
      for (std::int64_t x : integer_cases<std::int64_t>()) {
        SCOPED_TRACE(testing::Message() << x << " in [" << lo << ", " << hi << "]");
        EXPECT_EQ(em::clip(x, lo, hi), op(x));
        EXPECT_EQ(em::clip(static_cast<std::int8_t>(x), lo, hi), op(static_cast<std::int8_t>(x)));
      }
      for (float x : float_cases()) EXPECT_TRUE(same(em::clip(x, lo, hi), op(x)));
    }
  }
}

}  // namespace
}  // namespace voxrt
