// Softmax, LogSoftmax, LayerNormalization and BatchNormalization: hand values for both tactics,
// numerical stability, and the vectorized tactic against the reference on random odd shapes.
#include "test_support.h"

namespace voxrt::testing {
namespace {

using ir::OpKind;

class NormBothTactics : public ::testing::TestWithParam<backends::TacticId> {};

Expected<Tensor> softmax(OpKind op, const Tensor& x, int opset, std::optional<std::int64_t> axis,
                         backends::TacticId tactic, int threads = 1) {
  ir::Attributes attrs;
  if (axis) attrs.set("axis", *axis);
  SingleNode single = make_node(op, {&x}, 1, attrs, opset);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outs, run_node(*single.node, {&x}, tactic, threads));
  return outs[0];
}

TEST_P(NormBothTactics, SoftmaxHandValues) {
  const Tensor x = Tensor::from_vector<float>({1, 3}, {1, 2, 3});
  auto y = softmax(OpKind::kSoftmax, x, 13, std::nullopt, GetParam());
  ASSERT_TRUE(y.has_value()) << y.status().to_string();
  EXPECT_TRUE(equals(*y, {1, 3}, {0.09003057, 0.24472847, 0.66524096}, 1e-6));
  auto log_y = softmax(OpKind::kLogSoftmax, x, 13, -1, GetParam());
  ASSERT_TRUE(log_y.has_value());
  EXPECT_TRUE(equals(*log_y, {1, 3}, {-2.40760596, -1.40760596, -0.40760596}, 1e-6));
}

TEST_P(NormBothTactics, SoftmaxOpsetBefore13FlattensAtAxis) {
  const Tensor x = Tensor::from_vector<float>({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  // Opset 11, default axis 1: each row of the [2, 4] view is normalized.
  auto flat = softmax(OpKind::kSoftmax, x, 11, std::nullopt, GetParam());
  ASSERT_TRUE(flat.has_value());
  const std::vector<double> block{0.0320586, 0.0871443, 0.2368828, 0.6439143};
  std::vector<double> expected = block;
  expected.insert(expected.end(), block.begin(), block.end());
  EXPECT_TRUE(equals(*flat, {2, 2, 2}, expected, 1e-5));
  // Opset 13, axis 1: only pairs along dim 1 are normalized, e.g. x[0, :, 0] = (0, 2).
  auto single_axis = softmax(OpKind::kSoftmax, x, 13, 1, GetParam());
  ASSERT_TRUE(single_axis.has_value());
  const double a = 0.1192029, b = 0.8807971;
  EXPECT_TRUE(equals(*single_axis, {2, 2, 2}, {a, a, b, b, a, a, b, b}, 1e-6));
}

TEST_P(NormBothTactics, SoftmaxOfLargeValuesIsStable) {
  const Tensor big = Tensor::from_vector<float>({2, 3}, {1000, 1001, 1002, -1e4f, 0, 1e4f});
  auto y = softmax(OpKind::kSoftmax, big, 13, -1, GetParam());
  ASSERT_TRUE(y.has_value());
  EXPECT_TRUE(equals(*y, {2, 3}, {0.09003057, 0.24472847, 0.66524096, 0, 0, 1}, 1e-6));
  auto log_y = softmax(OpKind::kLogSoftmax, big, 13, -1, GetParam());
  ASSERT_TRUE(log_y.has_value());
  EXPECT_TRUE(equals(*log_y, {2, 3}, {-2.40760596, -1.40760596, -0.40760596, -2e4, -1e4, 0}, 1e-6));
  // Large values down a strided axis too.
  auto columns = softmax(OpKind::kSoftmax, big, 13, 0, GetParam());
  ASSERT_TRUE(columns.has_value());
  for (double v : values_of(*columns)) EXPECT_TRUE(std::isfinite(v));
  EXPECT_TRUE(equals(*columns, {2, 3}, {1, 1, 0, 0, 0, 1}, 1e-6));
}

Expected<std::vector<Tensor>> layer_norm(const Tensor& x, const Tensor& scale, const Tensor* bias,
                                         std::int64_t axis, float epsilon, std::size_t outputs,
                                         backends::TacticId tactic, int threads = 1) {
  SingleNode single =
      make_node(OpKind::kLayerNormalization, {&x, &scale, bias}, outputs,
                attributes({{"axis", axis}, {"epsilon", epsilon}}), 17, {false, true, true});
  return run_node(*single.node, {&x, &scale, bias}, tactic, threads);
}

TEST_P(NormBothTactics, LayerNormHandValues) {
  const Tensor x = Tensor::from_vector<float>({1, 4}, {1, 2, 3, 4});
  const Tensor scale = Tensor::from_vector<float>({4}, {2, 1, 1, 0.5f});
  const Tensor bias = Tensor::from_vector<float>({4}, {0, 1, 0, -1});
  auto out = layer_norm(x, scale, &bias, -1, 1e-5f, 3, GetParam());
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  const double inv = 1.0 / std::sqrt(1.25 + 1e-5);
  EXPECT_TRUE(equals((*out)[0], {1, 4},
                     {-1.5 * inv * 2, -0.5 * inv + 1, 0.5 * inv, 1.5 * inv * 0.5 - 1}, 1e-6));
  EXPECT_TRUE(equals((*out)[1], {1, 1}, {2.5}));
  EXPECT_TRUE(equals((*out)[2], {1, 1}, {inv}, 1e-6));
  // axis 0 normalizes everything; a [1] scale broadcasts; no bias.
  const Tensor matrix = Tensor::from_vector<float>({2, 2}, {1, 3, 5, 7});
  const Tensor half = Tensor::from_vector<float>({1}, {0.5f});
  auto all = layer_norm(matrix, half, nullptr, 0, 0.0f, 1, GetParam());
  ASSERT_TRUE(all.has_value()) << all.status().to_string();
  const double s = 0.5 / std::sqrt(5.0);
  EXPECT_TRUE(equals((*all)[0], {2, 2}, {-3 * s, -1 * s, 1 * s, 3 * s}, 1e-6));
}

TEST_P(NormBothTactics, BatchNormHandValues) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 1, 2}, {1, 2, 3, 4});
  const Tensor scale = Tensor::from_vector<float>({2}, {1, 2});
  const Tensor bias = Tensor::from_vector<float>({2}, {0, 1});
  const Tensor mean = Tensor::from_vector<float>({2}, {1, 3});
  const Tensor var = Tensor::from_vector<float>({2}, {1, 4});
  SingleNode single =
      make_node(OpKind::kBatchNormalization, {&x, &scale, &bias, &mean, &var}, 1,
                attributes({{"epsilon", 0.0f}}), 15, {false, true, true, true, true});
  auto out = run_node(*single.node, {&x, &scale, &bias, &mean, &var}, GetParam());
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  EXPECT_TRUE(equals((*out)[0], {1, 2, 1, 2}, {0, 1, 1, 2}));
}

INSTANTIATE_TEST_SUITE_P(Tactics, NormBothTactics, ::testing::Values(kReference, kVectorized),
                         [](const auto& param_info) {
                           return param_info.param == kReference ? "reference" : "vectorized";
                         });

Dims random_dims(std::mt19937& rng, int rank, std::int64_t max_elements = 150000) {
  static const std::int64_t kSizes[] = {1, 2, 3, 5, 7, 16, 17, 33, 100, 1031};
  Dims dims;
  for (int d = 0; d < rank; ++d) dims.push_back(kSizes[rng() % std::size(kSizes)]);
  while (element_count(dims) > max_elements) *std::max_element(dims.begin(), dims.end()) /= 7;
  return dims;
}

TEST(SoftmaxVectorized, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(2024);
  for (int c = 0; c < 160; ++c) {
    const int rank = 1 + c % 4;
    const Dims dims = random_dims(rng, rank);
    const int opset = c % 4 == 0 ? 11 : 13;
    const OpKind op = (c / 2) % 2 ? OpKind::kLogSoftmax : OpKind::kSoftmax;
    const std::int64_t axis =
        static_cast<std::int64_t>(rng() % static_cast<unsigned>(rank)) - (c % 3 ? rank : 0);
    const Tensor x = random_f32(dims, rng, -20.0f, 20.0f);
    auto expected = softmax(op, x, opset, axis, kReference);
    auto actual = softmax(op, x, opset, axis, kVectorized, 1 + c % 3);
    ASSERT_TRUE(expected.has_value() && actual.has_value())
        << dims_to_string(dims) << " axis " << axis;
    const double atol = op == OpKind::kSoftmax ? 1e-7 : 2e-5;
    EXPECT_TRUE(all_close(*actual, *expected, 2e-5, atol))
        << ir::op_name(op) << " opset " << opset << " dims " << dims_to_string(dims) << " axis "
        << axis;
  }
}

TEST(LayerNormVectorized, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(77);
  for (int c = 0; c < 120; ++c) {
    const int rank = 1 + c % 4;
    const Dims dims = random_dims(rng, rank);
    const std::int64_t axis =
        static_cast<std::int64_t>(rng() % static_cast<unsigned>(rank)) - (c % 2 ? rank : 0);
    const std::size_t first = static_cast<std::size_t>(axis < 0 ? axis + rank : axis);
    Dims normalized(dims.begin() + static_cast<std::ptrdiff_t>(first), dims.end());
    // Full-shape parameters, a [1] scale, or only the last dim (broadcast over the others).
    Dims param_dims = normalized;
    if (c % 3 == 1) param_dims = {1};
    if (c % 3 == 2) param_dims = {normalized.back()};
    const Tensor x = random_f32(dims, rng, -4.0f, 4.0f);
    const Tensor scale = random_f32(param_dims, rng, 0.5f, 2.0f);
    const Tensor bias = random_f32(param_dims, rng);
    const Tensor* bias_or_null = c % 4 == 3 ? nullptr : &bias;
    auto expected = layer_norm(x, scale, bias_or_null, axis, 1e-5f, 3, kReference);
    auto actual = layer_norm(x, scale, bias_or_null, axis, 1e-5f, 3, kVectorized, 1 + c % 3);
    ASSERT_TRUE(expected.has_value()) << expected.status().to_string();
    ASSERT_TRUE(actual.has_value()) << actual.status().to_string();
    for (std::size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(all_close((*actual)[i], (*expected)[i], 1e-4, 1e-4))
          << "output " << i << " dims " << dims_to_string(dims) << " axis " << axis;
    }
  }
}

TEST(LayerNormVectorized, RowsWithALargeMeanKeepTheirVariance) {
  // x = 1e4 + N(0, 1): E[x^2] - E[x]^2 in f32 would lose every digit of the variance.
  std::mt19937 rng(5);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  Tensor x = Tensor::uninitialized(DType::kF32, {4, 513});
  for (float& v : x.span<float>()) v = 1e4f + noise(rng);
  const Tensor scale = Tensor::from_vector<float>({1}, {1.0f});
  auto expected = layer_norm(x, scale, nullptr, -1, 1e-5f, 3, kReference);
  auto actual = layer_norm(x, scale, nullptr, -1, 1e-5f, 3, kVectorized);
  ASSERT_TRUE(expected.has_value() && actual.has_value());
  // Inputs themselves carry ~1e-3 of rounding at 1e4, so that bounds the agreement.
  EXPECT_TRUE(all_close((*actual)[0], (*expected)[0], 0, 3e-3));
  EXPECT_TRUE(all_close((*actual)[2], (*expected)[2], 1e-3, 0));
}

TEST(BatchNormVectorized, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(31);
  for (int c = 0; c < 60; ++c) {
    const int rank = 2 + c % 4;
    const Dims dims = random_dims(rng, rank);
    const Dims channel{dims[1]};
    const Tensor x = random_f32(dims, rng);
    const Tensor scale = random_f32(channel, rng);
    const Tensor bias = random_f32(channel, rng);
    const Tensor mean = random_f32(channel, rng);
    const Tensor var = random_f32(channel, rng, 0.01f, 4.0f);
    // Constant statistics are folded when the kernel is made; others are folded per run.
    const bool constant = c % 2 == 0;
    SingleNode single = make_node(OpKind::kBatchNormalization, {&x, &scale, &bias, &mean, &var}, 1,
                                  attributes({{"epsilon", 1e-3f}}), 15,
                                  {false, constant, constant, constant, constant});
    auto expected = run_node(*single.node, {&x, &scale, &bias, &mean, &var}, kReference);
    auto actual = run_node(*single.node, {&x, &scale, &bias, &mean, &var}, kVectorized, 1 + c % 3);
    ASSERT_TRUE(expected.has_value() && actual.has_value());
    EXPECT_TRUE(all_close((*actual)[0], (*expected)[0], 1e-5, 1e-5)) << dims_to_string(dims);
  }
}

}  // namespace
}  // namespace voxrt::testing
