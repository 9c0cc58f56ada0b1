// Einsum's reference kernel against sums written out by hand: a batched matmul, an implicit
// output, a diagonal under an ellipsis, a full sum, a transpose, and ellipsis broadcasting.
#include "dense_test_util.h"
#include "ir/einsum_equation.h"

namespace voxrt::dense_test {
namespace {

ir::Attributes equation(const std::string& eq) {
  ir::Attributes attrs;
  attrs.set("equation", eq);
  return attrs;
}

Tensor einsum(const std::string& eq, std::vector<Tensor> inputs) {
  std::vector<Operand> operands;
  for (Tensor& t : inputs) operands.push_back(runtime(std::move(t)));
  auto one = make_node(ir::OpKind::kEinsum, std::move(operands), equation(eq));
  auto out = run_tactic(*one, backends::kReferenceTactic, 1);
  EXPECT_TRUE(out.has_value()) << out.status().to_string();
  return out ? *out : Tensor();
}

TEST(Einsum, BatchedMatMulWithAndWithoutArrow) {
  const Tensor a = random_tensor({2, 3, 4}, 1), b = random_tensor({2, 4, 5}, 2);
  Tensor want = Tensor::zeros(DType::kF32, {2, 3, 5});
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      for (int k = 0; k < 5; ++k)
        for (int j = 0; j < 4; ++j)
          want.data<float>()[(n * 3 + i) * 5 + k] +=
              a.data<float>()[(n * 3 + i) * 4 + j] * b.data<float>()[(n * 4 + j) * 5 + k];
  EXPECT_TRUE(all_close(want, einsum("bij,bjk->bik", {a, b}), 1e-5, 1e-5));
  // Implicit output: the letters used once, alphabetically (i, k); j is summed.
  const Tensor c = random_tensor({3, 4}, 3), d = random_tensor({4, 5}, 4);
  Tensor want2 = Tensor::zeros(DType::kF32, {3, 5});
  for (int i = 0; i < 3; ++i)
    for (int k = 0; k < 5; ++k)
      for (int j = 0; j < 4; ++j)
        want2.data<float>()[i * 5 + k] += c.data<float>()[i * 4 + j] * d.data<float>()[j * 5 + k];
  EXPECT_TRUE(all_close(want2, einsum("ij,jk", {c, d}), 1e-5, 1e-5));
}

TEST(Einsum, DiagonalSumTransposeAndBroadcast) {
  const Tensor x = random_tensor({2, 3, 3}, 5);
  const Tensor diag = einsum("...ii->...i", {x});
  ASSERT_EQ(diag.dims(), (Dims{2, 3}));
  for (int n = 0; n < 2; ++n)
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(diag.data<float>()[n * 3 + i], x.data<float>()[(n * 3 + i) * 3 + i]);
  const Tensor total = einsum("ijk->", {x});
  double sum = 0;
  for (float v : x.span<float>()) sum += v;
  ASSERT_EQ(total.element_count(), 1);
  EXPECT_NEAR(total.data<float>()[0], sum, 1e-5);
  const Tensor t = einsum("nij->nji", {x});
  EXPECT_EQ(t.data<float>()[(1 * 3 + 2) * 3 + 0], x.data<float>()[(1 * 3 + 0) * 3 + 2]);
  // The ellipsis broadcasts a size-1 batch against 3.
  const Tensor a = random_tensor({1, 2, 4}, 6), b = random_tensor({3, 4, 2}, 7);
  const Tensor y = einsum("...ij,...jk->...ik", {a, b});
  ASSERT_EQ(y.dims(), (Dims{3, 2, 2}));
  for (int n = 0; n < 3; ++n) {
    float want = 0;
    for (int j = 0; j < 4; ++j)
      want += a.data<float>()[1 * 4 + j] * b.data<float>()[(n * 4 + j) * 2 + 0];
    EXPECT_NEAR(y.data<float>()[(n * 2 + 1) * 2 + 0], want, 1e-5);
  }
}

TEST(Einsum, BadEquationsAreErrors) {
  EXPECT_FALSE(ir::plan_einsum("t", "ijk->i", {2}).has_value());  // more letters than dims
  EXPECT_FALSE(ir::plan_einsum("t", "ij->ik", {2}).has_value());  // k is in no operand
  EXPECT_FALSE(ir::plan_einsum("t", "ij,jk", {2}).has_value());   // two terms, one input
  EXPECT_FALSE(ir::plan_einsum("t", "i1->i", {2}).has_value());   // not a letter
  EXPECT_FALSE(ir::plan_einsum("t", "ij->ii", {2}).has_value());  // repeated output letter
  auto plan = ir::plan_einsum("t", "ij,jk", {2, 2});
  ASSERT_TRUE(plan.has_value());
  EXPECT_FALSE(ir::einsum_label_sizes("t", *plan, {{2, 3}, {4, 5}}).has_value());  // j: 3 vs 4
}

}  // namespace
}  // namespace voxrt::dense_test
