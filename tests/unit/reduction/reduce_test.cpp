// Reduce* and ArgMax: hand-computed values for both tactics, then the vectorized tactic against
// the reference on random odd shapes, axes and thread counts.
#include <limits>

#include "test_support.h"

namespace voxrt::testing {
namespace {

using ir::OpKind;

struct ReduceCall {
  OpKind op;
  std::vector<std::int64_t> axes;  // used when has_axes
  bool has_axes = true;
  std::int64_t keepdims = 1;
  std::int64_t noop_with_empty_axes = 0;
};

Expected<Tensor> reduce(const ReduceCall& call, const Tensor& x, backends::TacticId tactic,
                        int threads = 1) {
  Tensor axes = i64_vector(call.axes);
  std::vector<const Tensor*> inputs{&x};
  if (call.has_axes) inputs.push_back(&axes);
  SingleNode single = make_node(call.op, inputs, 1,
                                attributes({{"keepdims", call.keepdims},
                                            {"noop_with_empty_axes", call.noop_with_empty_axes}}),
                                18, {false, true});
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_node(*single.node, inputs, tactic, threads));
  return outs[0];
}

const Tensor kMatrix = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});

class ReduceBothTactics : public ::testing::TestWithParam<backends::TacticId> {};

TEST_P(ReduceBothTactics, HandValuesOverRowsColumnsAndAll) {
  const auto tactic = GetParam();
  auto sum_rows = reduce({OpKind::kReduceSum, {1}}, kMatrix, tactic);
  ASSERT_TRUE(sum_rows.has_value()) << sum_rows.status().to_string();
  EXPECT_TRUE(equals(*sum_rows, {2, 1}, {6, 15}));
  auto max_cols = reduce({OpKind::kReduceMax, {0}, true, 0}, kMatrix, tactic);
  ASSERT_TRUE(max_cols.has_value());
  EXPECT_TRUE(equals(*max_cols, {3}, {4, 5, 6}));
  auto min_cols = reduce({OpKind::kReduceMin, {-2}, true, 1}, kMatrix, tactic);
  ASSERT_TRUE(min_cols.has_value());
  EXPECT_TRUE(equals(*min_cols, {1, 3}, {1, 2, 3}));
  auto mean_all = reduce({OpKind::kReduceMean, {}, false, 0}, kMatrix, tactic);
  ASSERT_TRUE(mean_all.has_value());
  EXPECT_TRUE(equals(*mean_all, {}, {3.5}));
  auto mean_all_kept = reduce({OpKind::kReduceMean, {}, true, 1}, kMatrix, tactic);
  ASSERT_TRUE(mean_all_kept.has_value());
  EXPECT_TRUE(equals(*mean_all_kept, {1, 1}, {3.5}));
  auto prod_rows = reduce({OpKind::kReduceProd, {-1}}, kMatrix, tactic);
  ASSERT_TRUE(prod_rows.has_value());
  EXPECT_TRUE(equals(*prod_rows, {2, 1}, {6, 120}));
  auto sum_square = reduce({OpKind::kReduceSumSquare, {1}, true, 0}, kMatrix, tactic);
  ASSERT_TRUE(sum_square.has_value());
  EXPECT_TRUE(equals(*sum_square, {2}, {14, 77}));
  auto l2 = reduce({OpKind::kReduceL2, {0}, true, 0}, kMatrix, tactic);
  ASSERT_TRUE(l2.has_value());
  EXPECT_TRUE(equals(*l2, {3}, {std::sqrt(17.0), std::sqrt(29.0), std::sqrt(45.0)}, 1e-6));
  auto lse = reduce({OpKind::kReduceLogSumExp, {1}, true, 0}, kMatrix, tactic);
  ASSERT_TRUE(lse.has_value());
  EXPECT_TRUE(equals(*lse, {2},
                     {std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)),
                      std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0))},
                     1e-6));
}

TEST_P(ReduceBothTactics, EmptyAxesReduceAllUnlessNoop) {
  const auto tactic = GetParam();
  auto all = reduce({OpKind::kReduceSum, {}, true, 0, 0}, kMatrix, tactic);
  ASSERT_TRUE(all.has_value());
  EXPECT_TRUE(equals(*all, {}, {21}));
  auto absent = reduce({OpKind::kReduceSum, {}, false, 1, 0}, kMatrix, tactic);
  ASSERT_TRUE(absent.has_value());
  EXPECT_TRUE(equals(*absent, {1, 1}, {21}));
  auto noop = reduce({OpKind::kReduceSum, {}, true, 0, 1}, kMatrix, tactic);
  ASSERT_TRUE(noop.has_value());
  EXPECT_TRUE(equals(*noop, {2, 3}, {1, 2, 3, 4, 5, 6}));
  // Reducing over no axis applies the reduction to each element alone: SumSquare squares.
  auto noop_square = reduce({OpKind::kReduceSumSquare, {}, false, 1, 1}, kMatrix, tactic);
  ASSERT_TRUE(noop_square.has_value());
  EXPECT_TRUE(equals(*noop_square, {2, 3}, {1, 4, 9, 16, 25, 36}));
}

TEST_P(ReduceBothTactics, ReductionsOverAnEmptyAxisGiveTheIdentity) {
  const auto tactic = GetParam();
  const Tensor empty = Tensor::zeros(DType::kF32, {2, 0, 3});
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  struct Case {
    OpKind op;
    double expected;
  } cases[] = {{OpKind::kReduceSum, 0},       {OpKind::kReduceProd, 1},
               {OpKind::kReduceMax, -inf},    {OpKind::kReduceMin, inf},
               {OpKind::kReduceSumSquare, 0}, {OpKind::kReduceL2, 0},
               {OpKind::kReduceMean, nan},    {OpKind::kReduceLogSumExp, -inf}};
  for (const Case& c : cases) {
    auto out = reduce({c.op, {1}, true, 0}, empty, tactic);
    ASSERT_TRUE(out.has_value()) << ir::op_name(c.op);
    EXPECT_TRUE(equals(*out, {2, 3}, std::vector<double>(6, c.expected))) << ir::op_name(c.op);
  }
  auto empty_output =
      reduce({OpKind::kReduceSum, {1}, true, 1}, Tensor::zeros(DType::kF32, {0, 4}), tactic);
  ASSERT_TRUE(empty_output.has_value());
  EXPECT_EQ(empty_output->dims(), (Dims{0, 1}));
}

TEST_P(ReduceBothTactics, IntegerReductionsAreExactAndWrap) {
  const auto tactic = GetParam();
  const Tensor i64 = Tensor::from_vector<std::int64_t>({2, 3}, {1, -2, 3, 4, 5, -6});
  auto sum = reduce({OpKind::kReduceSum, {1}, true, 0}, i64, tactic);
  ASSERT_TRUE(sum.has_value());
  EXPECT_EQ(sum->dtype(), DType::kI64);
  EXPECT_EQ(values_of(*sum), (std::vector<double>{2, 3}));
  auto prod = reduce({OpKind::kReduceProd, {0}, true, 0}, i64, tactic);
  ASSERT_TRUE(prod.has_value());
  EXPECT_EQ(values_of(*prod), (std::vector<double>{4, -10, -18}));
  const Tensor i32 = Tensor::from_vector<std::int32_t>({4}, {7, -9, 2, 2147483647});
  auto max = reduce({OpKind::kReduceMax, {0}, true, 0}, i32, tactic);
  ASSERT_TRUE(max.has_value());
  EXPECT_EQ(max->dtype(), DType::kI32);
  EXPECT_EQ(max->data<std::int32_t>()[0], 2147483647);
  auto min = reduce({OpKind::kReduceMin, {}, false, 1}, i32, tactic);
  ASSERT_TRUE(min.has_value());
  EXPECT_EQ(min->data<std::int32_t>()[0], -9);
  // INT32_MAX + 1 + 1 wraps to INT32_MIN + 1 in 32-bit two's complement.
  const Tensor near_max = Tensor::from_vector<std::int32_t>({3}, {2147483647, 1, 1});
  auto wrapped = reduce({OpKind::kReduceSum, {0}, true, 0}, near_max, tactic);
  ASSERT_TRUE(wrapped.has_value());
  EXPECT_EQ(wrapped->data<std::int32_t>()[0], std::numeric_limits<std::int32_t>::min() + 1);
}

TEST_P(ReduceBothTactics, LargeInputsDoNotOverflowLogSumExp) {
  const Tensor big = Tensor::from_vector<float>({1, 2}, {1000.0f, 1000.0f});
  auto lse = reduce({OpKind::kReduceLogSumExp, {1}, true, 0}, big, GetParam());
  ASSERT_TRUE(lse.has_value());
  EXPECT_TRUE(equals(*lse, {1}, {1000.0 + std::log(2.0)}, 1e-6));
}

Expected<Tensor> arg_max(const Tensor& x, std::int64_t axis, std::int64_t keepdims,
                         std::int64_t select_last, backends::TacticId tactic, int threads = 1) {
  SingleNode single = make_node(
      OpKind::kArgMax, {&x}, 1,
      attributes({{"axis", axis}, {"keepdims", keepdims}, {"select_last_index", select_last}}), 13);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_node(*single.node, {&x}, tactic, threads));
  return outs[0];
}

TEST_P(ReduceBothTactics, ArgMaxHandValues) {
  const auto tactic = GetParam();
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 3, 3, 5, 2, 5});
  auto first = arg_max(x, 1, 1, 0, tactic);
  ASSERT_TRUE(first.has_value()) << first.status().to_string();
  EXPECT_EQ(first->dtype(), DType::kI64);
  EXPECT_EQ(first->dims(), (Dims{2, 1}));
  EXPECT_EQ(values_of(*first), (std::vector<double>{1, 0}));
  auto last = arg_max(x, -1, 0, 1, tactic);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->dims(), (Dims{2}));
  EXPECT_EQ(values_of(*last), (std::vector<double>{2, 2}));
  auto columns = arg_max(x, 0, 0, 0, tactic);
  ASSERT_TRUE(columns.has_value());
  EXPECT_EQ(values_of(*columns), (std::vector<double>{1, 0, 1}));
  const Tensor ties = Tensor::from_vector<std::int64_t>({2, 2}, {4, 1, 4, 1});
  auto tie_first = arg_max(ties, 0, 0, 0, tactic);
  auto tie_last = arg_max(ties, 0, 0, 1, tactic);
  ASSERT_TRUE(tie_first.has_value() && tie_last.has_value());
  EXPECT_EQ(values_of(*tie_first), (std::vector<double>{0, 0}));
  EXPECT_EQ(values_of(*tie_last), (std::vector<double>{1, 1}));
  const Tensor i32 = Tensor::from_vector<std::int32_t>({5}, {-3, 8, -1, 8, 0});
  auto int_max = arg_max(i32, 0, 1, 0, tactic);
  ASSERT_TRUE(int_max.has_value());
  EXPECT_EQ(values_of(*int_max), (std::vector<double>{1}));
}

INSTANTIATE_TEST_SUITE_P(Tactics, ReduceBothTactics, ::testing::Values(kReference, kVectorized),
                         [](const auto& param_info) {
                           return param_info.param == kReference ? "reference" : "vectorized";
                         });

// Random shapes with odd sizes (1, primes, one long axis), random axis subsets written with
// either sign, keepdims 0/1, and 1 or 3 threads.
struct RandomCase {
  Dims dims;
  ReduceCall call;
  int threads = 1;
};

std::vector<RandomCase> random_cases(OpKind op, std::mt19937& rng, int count) {
  static const std::int64_t kSizes[] = {1, 2, 3, 5, 7, 13, 17, 33, 64};
  std::vector<RandomCase> cases;
  std::uniform_int_distribution<int> coin(0, 1);
  for (int c = 0; c < count; ++c) {
    RandomCase rc;
    const int rank = 1 + static_cast<int>(rng() % 4);
    for (int d = 0; d < rank; ++d) rc.dims.push_back(kSizes[rng() % std::size(kSizes)]);
    if (c % 5 == 0) {
      const std::size_t long_axis = rng() % rc.dims.size();
      rc.dims[long_axis] = 1000 + static_cast<std::int64_t>(rng() % 600);
      for (std::size_t d = 0; d < rc.dims.size(); ++d) {
        if (d != long_axis) rc.dims[d] = std::min<std::int64_t>(rc.dims[d], 5);
      }
    }
    rc.call.op = op;
    rc.call.keepdims = coin(rng);
    rc.call.has_axes = c % 7 != 0;
    for (int d = 0; d < rank; ++d) {
      if (coin(rng)) rc.call.axes.push_back(coin(rng) ? d : d - rank);
    }
    std::shuffle(rc.call.axes.begin(), rc.call.axes.end(), rng);
    rc.call.noop_with_empty_axes = c % 11 == 3 ? 1 : 0;
    rc.threads = c % 2 == 0 ? 1 : 3;
    cases.push_back(rc);
  }
  // The layouts the vectorized tactic treats specially, with long axes.
  cases.push_back({{3, 5001}, {op, {1}}, 3});
  cases.push_back({{5001, 3}, {op, {0}}, 3});
  cases.push_back({{2, 3001, 7}, {op, {-2}, true, 0}, 3});
  cases.push_back({{1, 4099, 1}, {op, {0, 1, 2}}, 1});
  cases.push_back({{5, 1, 300, 1, 7}, {op, {1, 2, 3}, true, 0}, 3});
  cases.push_back({{4, 5, 6, 7}, {op, {0, 2}, true, 1}, 3});  // interleaved: reference fallback
  return cases;
}

std::string describe(const RandomCase& rc) {
  std::string axes;
  for (auto a : rc.call.axes) axes += std::to_string(a) + " ";
  return str_cat(ir::op_name(rc.call.op), " dims ", dims_to_string(rc.dims), " axes [", axes,
                 "] has_axes ", rc.call.has_axes, " keepdims ", rc.call.keepdims, " noop ",
                 rc.call.noop_with_empty_axes, " threads ", rc.threads);
}

TEST(ReduceVectorized, MatchesReferenceOnRandomF32Shapes) {
  std::mt19937 rng(1234);
  for (OpKind op : {OpKind::kReduceSum, OpKind::kReduceMean, OpKind::kReduceMax, OpKind::kReduceMin,
                    OpKind::kReduceProd, OpKind::kReduceL2, OpKind::kReduceSumSquare,
                    OpKind::kReduceLogSumExp}) {
    for (const RandomCase& rc : random_cases(op, rng, 40)) {
      // Products of many values only stay finite for values near 1.
      const bool product = op == OpKind::kReduceProd;
      const Tensor x = product ? random_f32(rc.dims, rng, 0.99f, 1.01f) : random_f32(rc.dims, rng);
      auto expected = reduce(rc.call, x, kReference);
      auto actual = reduce(rc.call, x, kVectorized, rc.threads);
      ASSERT_TRUE(expected.has_value()) << describe(rc) << ": " << expected.status().to_string();
      ASSERT_TRUE(actual.has_value()) << describe(rc) << ": " << actual.status().to_string();
      // f32 accumulation against double: error grows with the reduced count, relative to sum |x|.
      const double atol = op == OpKind::kReduceSum
                              ? 2e-5 * std::sqrt(static_cast<double>(x.element_count()))
                              : 1e-5;
      EXPECT_TRUE(all_close(*actual, *expected, product ? 1e-4 : 2e-5, atol)) << describe(rc);
    }
  }
}

TEST(ReduceVectorized, MatchesReferenceExactlyOnIntegers) {
  std::mt19937 rng(99);
  for (OpKind op :
       {OpKind::kReduceSum, OpKind::kReduceMax, OpKind::kReduceMin, OpKind::kReduceProd}) {
    for (const RandomCase& rc : random_cases(op, rng, 20)) {
      for (DType dtype : {DType::kI32, DType::kI64}) {
        const Tensor x = dtype == DType::kI32 ? random_int<std::int32_t>(rc.dims, rng, -1000, 1000)
                                              : random_int<std::int64_t>(rc.dims, rng, -1000, 1000);
        auto expected = reduce(rc.call, x, kReference);
        auto actual = reduce(rc.call, x, kVectorized, rc.threads);
        ASSERT_TRUE(expected.has_value() && actual.has_value()) << describe(rc);
        EXPECT_TRUE(all_close(*actual, *expected, 0, 0))
            << describe(rc) << " " << dtype_name(dtype);
      }
    }
  }
}

TEST(ArgMaxVectorized, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(7);
  static const std::int64_t kSizes[] = {1, 2, 3, 5, 7, 17, 33, 1500};
  for (int c = 0; c < 120; ++c) {
    const int rank = 1 + c % 4;
    Dims dims;
    for (int d = 0; d < rank; ++d) dims.push_back(kSizes[rng() % std::size(kSizes)]);
    if (element_count(dims) > 200000) dims[0] = 1;
    const std::int64_t axis =
        static_cast<std::int64_t>(rng() % static_cast<unsigned>(rank)) - (c % 3 == 0 ? rank : 0);
    const std::int64_t keepdims = c % 2, select_last = (c / 2) % 2;
    // Small integer ranges make ties common, which is where first/last index matters.
    Tensor x = c % 3 == 0   ? random_int<std::int32_t>(dims, rng, -5, 5)
               : c % 3 == 1 ? random_int<std::int64_t>(dims, rng, -5, 5)
                            : random_f32(dims, rng);
    auto expected = arg_max(x, axis, keepdims, select_last, kReference);
    auto actual = arg_max(x, axis, keepdims, select_last, kVectorized, 1 + c % 3);
    ASSERT_TRUE(expected.has_value() && actual.has_value())
        << dims_to_string(dims) << " axis " << axis;
    EXPECT_TRUE(all_close(*actual, *expected, 0, 0))
        << dims_to_string(dims) << " axis " << axis << " select_last " << select_last << " "
        << dtype_name(x.dtype());
  }
}

TEST(ReduceKernels, TacticsListReferenceFirstAndRejectUnsupportedDtypes) {
  const Tensor f32 = Tensor::zeros(DType::kF32, {2, 2});
  const Tensor i64 = Tensor::zeros(DType::kI64, {2, 2});
  const Tensor u8 = Tensor::zeros(DType::kU8, {2, 2});
  auto tactics = backends::cpu::reduction_tactics(*make_node(OpKind::kReduceMean, {&f32}, 1).node);
  ASSERT_EQ(tactics.size(), 2u);
  EXPECT_EQ(tactics[0].id, kReference);
  EXPECT_EQ(tactics[0].name, "reference");
  EXPECT_EQ(tactics[1].name, "vectorized");
  EXPECT_EQ(backends::cpu::reduction_tactics(*make_node(OpKind::kReduceSum, {&i64}, 1).node).size(),
            2u);
  EXPECT_TRUE(
      backends::cpu::reduction_tactics(*make_node(OpKind::kReduceMean, {&i64}, 1).node).empty());
  EXPECT_TRUE(
      backends::cpu::reduction_tactics(*make_node(OpKind::kReduceSum, {&u8}, 1).node).empty());
  auto bad = backends::cpu::make_reduction_kernel(*make_node(OpKind::kReduceSum, {&u8}, 1).node,
                                                  kReference);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("test_node"), std::string::npos);
  auto bad_tactic =
      backends::cpu::make_reduction_kernel(*make_node(OpKind::kReduceSum, {&f32}, 1).node, 7);
  EXPECT_FALSE(bad_tactic.has_value());
}

}  // namespace
}  // namespace voxrt::testing
