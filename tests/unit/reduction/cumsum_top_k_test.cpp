// CumSum (every combination of exclusive and reverse, a negative i32 axis, i64 data) and TopK
// (largest and smallest, ties by index, an inner axis) against values worked out by hand.
#include "test_support.h"

namespace voxrt::testing {
namespace {

Tensor run_one(ir::OpKind op, const std::vector<const Tensor*>& inputs, ir::Attributes attrs,
               std::size_t outputs = 1, std::size_t which = 0) {
  SingleNode single = make_node(op, inputs, outputs, std::move(attrs));
  auto out = run_node(*single.node, inputs, kReference);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return out ? (*out)[which] : Tensor();
}

TEST(CumSum, ExclusiveAndReverseAlongEitherAxis) {
  const Tensor x = Tensor::from_vector<float>({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor axis1 = Tensor::from_vector<std::int32_t>({}, {-1});
  const Tensor axis0 = Tensor::scalar_i64(0);
  auto attrs = [](std::int64_t exclusive, std::int64_t reverse) {
    return attributes({{"exclusive", exclusive}, {"reverse", reverse}});
  };
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&x, &axis1}, attrs(0, 0))),
            (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&x, &axis1}, attrs(1, 0))),
            (std::vector<double>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&x, &axis1}, attrs(0, 1))),
            (std::vector<double>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&x, &axis1}, attrs(1, 1))),
            (std::vector<double>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&x, &axis0}, attrs(0, 0))),
            (std::vector<double>{1, 2, 3, 5, 7, 9}));
  const Tensor ints = Tensor::from_vector<std::int64_t>({4}, {5, -1, 7, 3000000000});
  const Tensor zero = Tensor::scalar_i64(0);
  EXPECT_EQ(values_of(run_one(ir::OpKind::kCumSum, {&ints, &zero}, attrs(0, 0))),
            (std::vector<double>{5, 4, 11, 3000000011.0}));
}

TEST(TopK, LargestSmallestTiesAndInnerAxis) {
  const Tensor x = Tensor::from_vector<float>({2, 4}, {3, 1, 3, 2, -1, 5, 0, 5});
  const Tensor k2 = Tensor::from_vector<std::int64_t>({1}, {2});
  EXPECT_EQ(values_of(run_one(ir::OpKind::kTopK, {&x, &k2}, {}, 2, 0)),
            (std::vector<double>{3, 3, 5, 5}));
  // Equal values come lowest index first.
  EXPECT_EQ(values_of(run_one(ir::OpKind::kTopK, {&x, &k2}, {}, 2, 1)),
            (std::vector<double>{0, 2, 1, 3}));
  EXPECT_EQ(values_of(run_one(ir::OpKind::kTopK, {&x, &k2},
                              attributes({{"largest", std::int64_t{0}}}), 2, 1)),
            (std::vector<double>{1, 3, 0, 2}));
  const Tensor k1 = Tensor::from_vector<std::int64_t>({1}, {1});
  const Tensor columns =
      run_one(ir::OpKind::kTopK, {&x, &k1}, attributes({{"axis", std::int64_t{0}}}), 2, 1);
  EXPECT_EQ(columns.dims(), (Dims{1, 4}));
  EXPECT_EQ(values_of(columns), (std::vector<double>{0, 1, 0, 1}));
  // K larger than the axis is an error, not a read past the row.
  const Tensor k5 = Tensor::from_vector<std::int64_t>({1}, {5});
  SingleNode single = make_node(ir::OpKind::kTopK, {&x, &k5}, 2);
  EXPECT_FALSE(run_node(*single.node, {&x, &k5}, kReference).has_value());
}

}  // namespace
}  // namespace voxrt::testing
