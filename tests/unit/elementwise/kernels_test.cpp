// CPU elementwise kernels: the reference against torch/numpy values, the vectorized tactic
// against the reference on random odd shapes and broadcasts, casts and integer edge cases.
#include <limits>

#include "backends/cpu/elementwise/fast_math.h"
#include "elementwise_test_util.h"

namespace voxrt {
namespace {

using ir::OpKind;
using test::run_op;
using test::tensors_close;

Tensor run_one(OpKind op, const std::vector<const Tensor*>& inputs,
               const ir::Attributes& attrs = {}, backends::TacticId tactic = 0, int threads = 1) {
  auto result = run_op(op, inputs, attrs, tactic, threads);
  EXPECT_TRUE(result.has_value()) << result.status().to_string();
  if (!result.has_value()) return Tensor{};
  return std::move(result->at(0));
}

struct UnaryCase {
  OpKind op;
  std::vector<float> expected;
};

// Values from torch 1.13 (float32) for x = [-2.5, -1, -0.5, 0, 0.5, 1.5, 2.5]; LeakyRelu alpha
// 0.1, Elu alpha 0.7, HardSigmoid alpha 0.3 beta 0.4, Clip [-1, 0.75].
TEST(ElementwiseReference, UnaryOpsMatchTorch) {
  const std::vector<UnaryCase> cases = {
      {OpKind::kRelu, {0, 0, 0, 0, 0.5f, 1.5f, 2.5f}},
      {OpKind::kLeakyRelu, {-0.25f, -0.100000001f, -0.0500000007f, 0, 0.5f, 1.5f, 2.5f}},
      {OpKind::kSigmoid,
       {0.0758581758f, 0.268941432f, 0.377540678f, 0.5f, 0.622459352f, 0.817574441f, 0.924141824f}},
      {OpKind::kTanh,
       {-0.986614287f, -0.761594176f, -0.462117165f, 0, 0.462117165f, 0.905148268f, 0.986614287f}},
      {OpKind::kExp,
       {0.0820849985f, 0.36787945f, 0.606530666f, 1, 1.64872122f, 4.48168898f, 12.1824942f}},
      {OpKind::kNeg, {2.5f, 1, 0.5f, 0, -0.5f, -1.5f, -2.5f}},
      {OpKind::kAbs, {2.5f, 1, 0.5f, 0, 0.5f, 1.5f, 2.5f}},
      {OpKind::kErf,
       {-0.999593019f, -0.842700779f, -0.520499885f, 0, 0.520499885f, 0.966105163f, 0.999593019f}},
      {OpKind::kFloor, {-3, -1, -1, 0, 0, 1, 2}},
      {OpKind::kCeil, {-2, -1, 0, 0, 1, 2, 3}},
      {OpKind::kRound, {-2, -1, 0, 0, 0, 2, 2}},
      {OpKind::kSign, {-1, -1, -1, 0, 1, 1, 1}},
      {OpKind::kSoftplus,
       {0.078889735f, 0.313261688f, 0.474076986f, 0.693147182f, 0.974076986f, 1.70141327f,
        2.57888985f}},
      {OpKind::kElu, {-0.642540455f, -0.442484379f, -0.275428534f, 0, 0.5f, 1.5f, 2.5f}},
      {OpKind::kHardSigmoid, {0, 0.099999994f, 0.25f, 0.400000006f, 0.550000012f, 0.850000024f, 1}},
      {OpKind::kSin,
       {-0.598472118f, -0.841470957f, -0.47942555f, 0, 0.47942555f, 0.997494996f, 0.598472118f}},
      {OpKind::kCos,
       {-0.801143587f, 0.540302336f, 0.87758255f, 1, 0.87758255f, 0.070737198f, -0.801143587f}},
      {OpKind::kClip, {-1, -1, -0.5f, 0, 0.5f, 0.75f, 0.75f}},
  };
  const Tensor x = Tensor::from_vector<float>({7}, {-2.5f, -1, -0.5f, 0, 0.5f, 1.5f, 2.5f});
  const Tensor lo = Tensor::scalar_f32(-1.0f), hi = Tensor::scalar_f32(0.75f);
  for (const UnaryCase& c : cases) {
    ir::Attributes attrs;
    if (c.op == OpKind::kLeakyRelu) attrs.set("alpha", 0.1f);
    if (c.op == OpKind::kElu) attrs.set("alpha", 0.7f);
    if (c.op == OpKind::kHardSigmoid) {
      attrs.set("alpha", 0.3f);
      attrs.set("beta", 0.4f);
    }
    std::vector<const Tensor*> inputs{&x};
    if (c.op == OpKind::kClip) inputs = {&x, &lo, &hi};
    const Tensor expected = Tensor::from_vector<float>({7}, c.expected);
    for (backends::TacticId tactic : {0u, 1u}) {
      EXPECT_TRUE(tensors_close(expected, run_one(c.op, inputs, attrs, tactic), 1e-6, 1e-6))
          << ir::op_name(c.op) << " tactic " << tactic;
    }
  }
  const Tensor positive = Tensor::from_vector<float>({7}, {0.25f, 0.5f, 1, 2, 4, 9, 100});
  const std::vector<UnaryCase> positive_cases = {
      {OpKind::kLog,
       {-1.38629436f, -0.693147182f, 0, 0.693147182f, 1.38629436f, 2.19722462f, 4.60517025f}},
      {OpKind::kSqrt, {0.5f, 0.707106769f, 1, 1.41421354f, 2, 3, 10}},
      {OpKind::kReciprocal, {4, 2, 1, 0.5f, 0.25f, 0.111111112f, 0.00999999978f}},
  };
  for (const UnaryCase& c : positive_cases) {
    const Tensor expected = Tensor::from_vector<float>({7}, c.expected);
    EXPECT_TRUE(tensors_close(expected, run_one(c.op, {&positive}), 1e-6, 1e-6))
        << ir::op_name(c.op);
  }
}

TEST(ElementwiseReference, BinaryBroadcastByHand) {
  const Tensor a = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = Tensor::from_vector<float>({3}, {10, 20, 30});
  const Tensor col = Tensor::from_vector<float>({2, 1}, {100, 200});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({2, 3}, {11, 22, 33, 14, 25, 36}),
                            run_one(OpKind::kAdd, {&a, &row})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({2, 3}, {99, 98, 97, 196, 195, 194}),
                            run_one(OpKind::kSub, {&col, &a})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<float>({2, 3}, {1000, 2000, 3000, 2000, 4000, 6000}),
                    run_one(OpKind::kMul, {&col, &row})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<float>({2, 3}, {0.1f, 0.1f, 0.1f, 0.4f, 0.25f, 0.2f}),
                    run_one(OpKind::kDiv, {&a, &row})));
  const Tensor two = Tensor::scalar_f32(2.0f);
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({2, 3}, {1, 4, 9, 16, 25, 36}),
                            run_one(OpKind::kPow, {&a, &two})));
  const Tensor three = Tensor::from_vector<float>({1}, {3.0f});
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 3}, {false, false, false, true, true, true}),
                    run_one(OpKind::kGreater, {&a, &three})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 3}, {false, false, true, false, false, false}),
                    run_one(OpKind::kEqual, {&a, &three})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 3}, {true, true, true, false, false, false}),
                    run_one(OpKind::kLessOrEqual, {&a, &three})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 3}, {false, false, true, true, true, true}),
                    run_one(OpKind::kGreaterOrEqual, {&a, &three})));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 3}, {true, true, false, false, false, false}),
                    run_one(OpKind::kLess, {&a, &three})));
  // Variadic Max/Min with three broadcasting inputs.
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({2, 3}, {3, 3, 3, 4, 5, 6}),
                            run_one(OpKind::kMax, {&a, &three, &two})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({2, 3}, {1, 2, 2, 2, 2, 2}),
                            run_one(OpKind::kMin, {&a, &three, &two})));
  EXPECT_TRUE(tensors_close(a, run_one(OpKind::kMax, {&a})));
}

TEST(ElementwiseReference, LogicAndWhere) {
  const Tensor p = Tensor::from_vector<bool>({4}, {true, true, false, false});
  const Tensor q = Tensor::from_vector<bool>({4}, {true, false, true, false});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<bool>({4}, {true, false, false, false}),
                            run_one(OpKind::kAnd, {&p, &q})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<bool>({4}, {true, true, true, false}),
                            run_one(OpKind::kOr, {&p, &q})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<bool>({4}, {false, true, true, false}),
                            run_one(OpKind::kXor, {&p, &q})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<bool>({4}, {false, false, true, true}),
                            run_one(OpKind::kNot, {&p})));
  const Tensor cond = Tensor::from_vector<bool>({2, 1}, {true, false});
  const Tensor x = Tensor::from_vector<std::int64_t>({3}, {1, 2, 3});
  const Tensor y = Tensor::scalar_i64(-1);
  for (backends::TacticId tactic : {0u, 1u}) {
    EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({2, 3}, {1, 2, 3, -1, -1, -1}),
                              run_one(OpKind::kWhere, {&cond, &x, &y}, {}, tactic)));
  }
}

TEST(ElementwiseReference, IntegerEdgeCasesAreDefined) {
  constexpr std::int64_t kMin64 = std::numeric_limits<std::int64_t>::min();
  constexpr std::int32_t kMin32 = std::numeric_limits<std::int32_t>::min();
  const Tensor a = Tensor::from_vector<std::int64_t>({8}, {7, -7, 7, -7, 0, 5, kMin64, 9});
  const Tensor b = Tensor::from_vector<std::int64_t>({8}, {3, 3, -3, -3, 2, 0, -1, -1});
  ir::Attributes fmod;
  fmod.set("fmod", std::int64_t{1});
  for (backends::TacticId tactic : {0u, 1u}) {
    // numpy: trunc(a / b) = [2, -2, -2, 2, 0]; x / 0 = 0 and INT_MIN / -1 = INT_MIN by definition.
    EXPECT_TRUE(
        tensors_close(Tensor::from_vector<std::int64_t>({8}, {2, -2, -2, 2, 0, 0, kMin64, -9}),
                      run_one(OpKind::kDiv, {&a, &b}, {}, tactic)));
    // numpy.mod = [1, 2, -2, -1, 0]; numpy.fmod = [1, -1, 1, -1, 0]; mod by 0 or -1 = 0.
    EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({8}, {1, 2, -2, -1, 0, 0, 0, 0}),
                              run_one(OpKind::kMod, {&a, &b}, {}, tactic)));
    EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({8}, {1, -1, 1, -1, 0, 0, 0, 0}),
                              run_one(OpKind::kMod, {&a, &b}, fmod, tactic)));
    EXPECT_TRUE(
        tensors_close(Tensor::from_vector<std::int64_t>({8}, {-7, 7, -7, 7, 0, -5, kMin64, -9}),
                      run_one(OpKind::kNeg, {&a}, {}, tactic)));
    EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({8}, {7, 7, 7, 7, 0, 5, kMin64, 9}),
                              run_one(OpKind::kAbs, {&a}, {}, tactic)));
  }
  const Tensor a32 = Tensor::from_vector<std::int32_t>({3}, {kMin32, 6, 2147483647});
  const Tensor b32 = Tensor::from_vector<std::int32_t>({3}, {-1, 0, 1});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({3}, {kMin32, 0, 2147483647}),
                            run_one(OpKind::kDiv, {&a32, &b32})));
  // Overflow wraps like numpy.
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({3}, {2147483647, 6, kMin32}),
                            run_one(OpKind::kAdd, {&a32, &b32}, {}, 1)));
  // Integer Pow: exact, negative exponents defined; mixed base/exponent dtypes.
  const Tensor base = Tensor::from_vector<std::int64_t>({5}, {3, -2, 1, -1, 5});
  const Tensor exponent = Tensor::from_vector<std::int64_t>({5}, {4, 3, -2, -3, -1});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({5}, {81, -8, 1, -1, 0}),
                            run_one(OpKind::kPow, {&base, &exponent})));
  const Tensor f_exp = Tensor::from_vector<float>({5}, {0.5f, 2, 3, 2, 2});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>({5}, {1, 4, 1, 1, 25}),
                            run_one(OpKind::kPow, {&base, &f_exp})));
  const Tensor fx = Tensor::from_vector<float>({3}, {2, 3, 4});
  const Tensor ie = Tensor::from_vector<std::int32_t>({3}, {3, -1, 0});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({3}, {8, 1.0f / 3.0f, 1}),
                            run_one(OpKind::kPow, {&fx, &ie})));
  // Integer Clip, Relu, Sign, Max/Min.
  const Tensor ints = Tensor::from_vector<std::int32_t>({5}, {-9, -1, 0, 4, 100});
  const Tensor lo = Tensor::from_vector<std::int32_t>({}, {-2});
  const Tensor hi = Tensor::from_vector<std::int32_t>({}, {10});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({5}, {-2, -1, 0, 4, 10}),
                            run_one(OpKind::kClip, {&ints, &lo, &hi})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({5}, {-9, -1, 0, 4, 10}),
                            run_one(OpKind::kClip, {&ints, nullptr, &hi})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({5}, {0, 0, 0, 4, 100}),
                            run_one(OpKind::kRelu, {&ints})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({5}, {-1, -1, 0, 1, 1}),
                            run_one(OpKind::kSign, {&ints})));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({5}, {-2, -1, 0, 4, 100}),
                            run_one(OpKind::kMax, {&ints, &lo})));
}

TEST(ElementwiseReference, FloatModMatchesNumpy) {
  const Tensor a = Tensor::from_vector<float>({4}, {5.5f, -5.5f, 5.5f, -5.5f});
  const Tensor b = Tensor::from_vector<float>({4}, {2, 2, -2, -2});
  ir::Attributes fmod;
  fmod.set("fmod", std::int64_t{1});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({4}, {1.5f, -1.5f, 1.5f, -1.5f}),
                            run_one(OpKind::kMod, {&a, &b}, fmod)));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<float>({4}, {1.5f, 0.5f, -0.5f, -1.5f}),
                            run_one(OpKind::kMod, {&a, &b})));
}

TEST(ElementwiseReference, DropoutIsIdentityWithTrueMask) {
  const Tensor x = Tensor::from_vector<float>({2, 2}, {1, -2, 3, -4});
  auto result = run_op(OpKind::kDropout, {&x}, {}, 0, 1, 2);
  ASSERT_TRUE(result.has_value()) << result.status().to_string();
  EXPECT_TRUE(tensors_close(x, (*result)[0]));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({2, 2}, {true, true, true, true}), (*result)[1]));
  const Tensor i = Tensor::from_vector<std::int64_t>({3}, {5, 6, 7});
  EXPECT_TRUE(tensors_close(i, run_one(OpKind::kIdentity, {&i})));
}

// ---- Cast ---------------------------------------------------------------------------------

ir::Attributes cast_to(DType to) {
  ir::Attributes attrs;
  attrs.set("to", static_cast<std::int64_t>(to));
  return attrs;
}

TEST(ElementwiseCast, HandValuesAndSaturation) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Tensor x = Tensor::from_vector<float>({7}, {-2.7f, -0.5f, 0, 0.9f, 3.99f, 1e20f, nan});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int64_t>(
                                {7}, {-2, 0, 0, 0, 3, std::numeric_limits<std::int64_t>::max(), 0}),
                            run_one(OpKind::kCast, {&x}, cast_to(DType::kI64))));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::uint8_t>({7}, {0, 0, 0, 0, 3, 255, 0}),
                            run_one(OpKind::kCast, {&x}, cast_to(DType::kU8), 1)));
  EXPECT_TRUE(
      tensors_close(Tensor::from_vector<bool>({7}, {true, true, false, true, true, true, true}),
                    run_one(OpKind::kCast, {&x}, cast_to(DType::kBool))));
  const Tensor big = Tensor::from_vector<std::int64_t>({3}, {300, -129, 4294967297LL});
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int8_t>({3}, {44, 127, 1}),
                            run_one(OpKind::kCast, {&big}, cast_to(DType::kI8))));
  EXPECT_TRUE(tensors_close(Tensor::from_vector<std::int32_t>({3}, {300, -129, 1}),
                            run_one(OpKind::kCast, {&big}, cast_to(DType::kI32))));
  // f16: 1/3 rounds to 0x3555; bf16 keeps the top 16 bits with round to nearest even.
  const Tensor third = Tensor::from_vector<float>({2}, {1.0f / 3.0f, 65504.0f});
  Tensor half = run_one(OpKind::kCast, {&third}, cast_to(DType::kF16));
  ASSERT_EQ(half.dtype(), DType::kF16);
  EXPECT_EQ(half.data<std::uint16_t>()[0], 0x3555);
  EXPECT_EQ(half.data<std::uint16_t>()[1], 0x7BFF);
  Tensor bf = run_one(OpKind::kCast, {&third}, cast_to(DType::kBF16));
  EXPECT_EQ(bf.data<std::uint16_t>()[0], 0x3EAB);
}

TEST(ElementwiseCast, EveryPairRoundTripsAndTacticsAgree) {
  const std::vector<DType> dtypes = {DType::kF32, DType::kF16, DType::kBF16, DType::kI8,
                                     DType::kU8,  DType::kI32, DType::kI64,  DType::kBool};
  // Small integers survive every dtype (bool keeps only 0/1).
  const Tensor base = Tensor::from_vector<float>({2, 5}, {0, 1, 2, 3, 7, 100, 127, 1, 0, 5});
  const Tensor bits = Tensor::from_vector<float>({2, 5}, {0, 1, 1, 1, 1, 1, 1, 1, 0, 1});
  for (DType from : dtypes) {
    const Tensor source = run_one(OpKind::kCast, {&base}, cast_to(from));
    for (DType to : dtypes) {
      const Tensor mid0 = run_one(OpKind::kCast, {&source}, cast_to(to), 0);
      const Tensor mid1 = run_one(OpKind::kCast, {&source}, cast_to(to), 1, 2);
      EXPECT_TRUE(tensors_close(mid0, mid1)) << dtype_name(from) << " -> " << dtype_name(to);
      const Tensor back = run_one(OpKind::kCast, {&mid0}, cast_to(DType::kF32));
      const bool through_bool = from == DType::kBool || to == DType::kBool;
      EXPECT_TRUE(tensors_close(through_bool ? bits : base, back))
          << dtype_name(from) << " -> " << dtype_name(to) << " -> f32";
    }
  }
}

// ---- vectorized vs reference -------------------------------------------------------------

struct ShapePair {
  Dims a, b;
};

const std::vector<ShapePair>& broadcast_cases() {
  static const std::vector<ShapePair> cases = {
      {{37}, {37}},                  // contiguous
      {{3, 5, 7}, {}},               // scalar
      {{1}, {4, 9, 33}},             // scalar on the left
      {{6, 129}, {129}},             // row broadcast (bias)
      {{6, 129}, {6, 1}},            // column broadcast
      {{2, 1, 7}, {5, 1}},           // both sides broadcast
      {{3, 1, 5, 1}, {1, 4, 1, 6}},  // alternating
      {{2, 3, 1, 17}, {3, 11, 17}},  // mixed ranks
      {{40000}, {40000}},            // large enough to split over threads
      {{70, 1000}, {1, 1000}},       // large, row broadcast
      {{0, 3}, {3}},                 // empty
  };
  return cases;
}

TEST(ElementwiseVectorized, BinaryOpsMatchReferenceOnBroadcasts) {
  std::mt19937 rng(1234);
  const std::vector<OpKind> float_ops = {OpKind::kAdd,     OpKind::kSub,        OpKind::kMul,
                                         OpKind::kDiv,     OpKind::kPow,        OpKind::kMax,
                                         OpKind::kMin,     OpKind::kMod,        OpKind::kEqual,
                                         OpKind::kGreater, OpKind::kLessOrEqual};
  for (const ShapePair& shapes : broadcast_cases()) {
    const Tensor a = test::random_f32(shapes.a, rng, 0.1f, 3.0f);
    const Tensor b = test::random_f32(shapes.b, rng, 0.1f, 3.0f);
    for (OpKind op : float_ops) {
      ir::Attributes attrs;
      if (op == OpKind::kMod) attrs.set("fmod", std::int64_t{1});
      const Tensor expected = run_one(op, {&a, &b}, attrs, 0);
      EXPECT_TRUE(tensors_close(expected, run_one(op, {&a, &b}, attrs, 1, 3), 0, 0))
          << ir::op_name(op) << " " << dims_to_string(shapes.a) << " with "
          << dims_to_string(shapes.b);
    }
    const Tensor ia = test::random_int<std::int32_t>(shapes.a, rng, -50, 50);
    const Tensor ib = test::random_int<std::int32_t>(shapes.b, rng, -5, 5);
    for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kMod,
                      OpKind::kMax, OpKind::kLess}) {
      EXPECT_TRUE(tensors_close(run_one(op, {&ia, &ib}, {}, 0), run_one(op, {&ia, &ib}, {}, 1, 3)))
          << ir::op_name(op) << " i32 " << dims_to_string(shapes.a) << " with "
          << dims_to_string(shapes.b);
    }
    const Tensor pa = test::random_bool(shapes.a, rng);
    const Tensor pb = test::random_bool(shapes.b, rng);
    EXPECT_TRUE(tensors_close(run_one(OpKind::kXor, {&pa, &pb}, {}, 0),
                              run_one(OpKind::kXor, {&pa, &pb}, {}, 1, 2)));
  }
}

TEST(ElementwiseVectorized, WhereMatchesReferenceOnThreeWayBroadcasts) {
  std::mt19937 rng(77);
  const std::vector<std::vector<Dims>> cases = {
      {{5, 7}, {5, 7}, {5, 7}}, {{5, 7}, {}, {5, 7}}, {{5, 1}, {1, 7}, {}},
      {{1, 7}, {5, 7}, {1}},    {{}, {3, 9}, {9}},    {{300, 1}, {1, 257}, {300, 257}},
  };
  for (const auto& dims : cases) {
    const Tensor c = test::random_bool(dims[0], rng);
    const Tensor x = test::random_f32(dims[1], rng);
    const Tensor y = test::random_f32(dims[2], rng);
    EXPECT_TRUE(tensors_close(run_one(OpKind::kWhere, {&c, &x, &y}, {}, 0),
                              run_one(OpKind::kWhere, {&c, &x, &y}, {}, 1, 3), 0, 0))
        << dims_to_string(dims[0]) << " " << dims_to_string(dims[1]) << " "
        << dims_to_string(dims[2]);
    const Tensor xi = test::random_int<std::int64_t>(dims[1], rng, -9, 9);
    const Tensor yi = test::random_int<std::int64_t>(dims[2], rng, -9, 9);
    EXPECT_TRUE(tensors_close(run_one(OpKind::kWhere, {&c, &xi, &yi}, {}, 0),
                              run_one(OpKind::kWhere, {&c, &xi, &yi}, {}, 1, 2)));
  }
}

TEST(ElementwiseVectorized, UnaryOpsMatchReference) {
  std::mt19937 rng(99);
  const std::vector<OpKind> ops = {
      OpKind::kRelu,  OpKind::kLeakyRelu, OpKind::kSigmoid,  OpKind::kTanh,  OpKind::kExp,
      OpKind::kNeg,   OpKind::kAbs,       OpKind::kErf,      OpKind::kFloor, OpKind::kCeil,
      OpKind::kRound, OpKind::kSign,      OpKind::kSoftplus, OpKind::kElu,   OpKind::kHardSigmoid,
      OpKind::kSin,   OpKind::kCos};
  for (const Dims& dims : {Dims{1}, Dims{3, 17}, Dims{50001}}) {
    const Tensor x = test::random_f32(dims, rng, -12.0f, 12.0f);
    for (OpKind op : ops) {
      // The fast exp/sigmoid/tanh/erf are approximations: a few ulp, < 1e-6 absolute.
      EXPECT_TRUE(tensors_close(run_one(op, {&x}, {}, 0), run_one(op, {&x}, {}, 1, 3), 1e-6, 1e-6))
          << ir::op_name(op) << " " << dims_to_string(dims);
    }
  }
}

TEST(ElementwiseFastMath, ErfSigmoidTanhExpAccuracyOnDenseGrid) {
  double erf_err = 0, sigmoid_err = 0, tanh_err = 0, exp_rel = 0;
  for (float x = -10.0f; x <= 10.0f; x += 1.0f / 4096.0f) {
    erf_err = std::max(
        erf_err, std::fabs(double(backends::cpu::elementwise::fast_erf(x)) - std::erf(double(x))));
    sigmoid_err =
        std::max(sigmoid_err, std::fabs(double(backends::cpu::elementwise::fast_sigmoid(x)) -
                                        1.0 / (1.0 + std::exp(-double(x)))));
    tanh_err = std::max(tanh_err, std::fabs(double(backends::cpu::elementwise::fast_tanh(x)) -
                                            std::tanh(double(x))));
    const double e = std::exp(double(x));
    exp_rel = std::max(exp_rel, std::fabs(double(backends::cpu::elementwise::fast_exp(x)) - e) / e);
  }
  EXPECT_LT(erf_err, 1e-6);
  EXPECT_LT(sigmoid_err, 1e-6);
  EXPECT_LT(tanh_err, 1e-6);
  EXPECT_LT(exp_rel, 4e-7);
  using backends::cpu::elementwise::fast_exp;
  EXPECT_EQ(fast_exp(100.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fast_exp(-100.0f), 0.0f);
  EXPECT_TRUE(std::isnan(fast_exp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_GT(fast_exp(88.7f), 3.0e38f);
}

TEST(ElementwiseKernels, UnsupportedDtypesHaveNoTactics) {
  ir::Graph graph;
  ir::Value* x = graph.add_value("x", DType::kI32, ir::sym_shape_from_dims({3}));
  ir::Value* y = graph.add_value("y", DType::kI32, ir::sym_shape_from_dims({3}));
  ir::Node* sigmoid = graph.add_node(OpKind::kSigmoid, "s", {x}, {y});
  EXPECT_TRUE(backends::cpu::elementwise_tactics(*sigmoid).empty());
  ir::Node* neg = graph.add_node(OpKind::kNeg, "n", {x}, {y});
  const auto tactics = backends::cpu::elementwise_tactics(*neg);
  ASSERT_EQ(tactics.size(), 2u);
  EXPECT_EQ(tactics[0].name, "reference");
  EXPECT_EQ(tactics[1].name, "vectorized");
  EXPECT_FALSE(backends::cpu::make_elementwise_kernel(*neg, 7).has_value());
}

}  // namespace
}  // namespace voxrt
