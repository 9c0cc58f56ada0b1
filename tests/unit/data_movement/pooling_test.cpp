// Pooling: the reference against the ONNX spec's precomputed examples and PyTorch values, the
// blocked tactic against the reference on random 1-D/2-D/3-D cases, and shape inference.
#include <cmath>

#include "unit/data_movement/op_test_util.h"

namespace voxrt::testing {
namespace {

using ir::Dim;
using ir::OpKind;
using I64 = std::vector<std::int64_t>;
using F32 = std::vector<float>;

// Runs reference and blocked (1 and 3 threads); they must agree to float rounding.
Tensor pool(OpKind op, const Tensor& x, ir::Attributes attrs = {}) {
  TestNode t = make_node(op, {&x}, 1, std::move(attrs));
  const auto tactics = backends::cpu::tactics_for(*t.node);
  EXPECT_EQ(tactics.size(), 2u);
  auto reference = run_node(*t.node, {&x}, backends::kReferenceTactic);
  EXPECT_TRUE(reference.has_value()) << reference.status().to_string();
  if (!reference) return {};
  for (int threads : {1, 3}) {
    auto blocked = run_node(*t.node, {&x}, 1, threads);
    EXPECT_TRUE(blocked.has_value()) << blocked.status().to_string();
    if (!blocked) continue;
    const Tensor& a = (*reference)[0];
    const Tensor& b = (*blocked)[0];
    EXPECT_EQ(a.dims(), b.dims());
    if (a.dims() != b.dims()) continue;
    for (std::int64_t i = 0; i < a.element_count(); ++i) {
      const float expected = a.data<float>()[i];
      EXPECT_NEAR(b.data<float>()[i], expected, 1e-5f * (1.0f + std::fabs(expected)))
          << "element " << i;
    }
  }
  return (*reference)[0];
}

::testing::AssertionResult near_values(const Tensor& t, const Dims& dims, const F32& values) {
  if (t.dims() != dims) {
    return ::testing::AssertionFailure()
           << "dims " << dims_to_string(t.dims()) << ", expected " << dims_to_string(dims);
  }
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (std::fabs(t.data<float>()[i] - values[i]) > 1e-5f * (1.0f + std::fabs(values[i]))) {
      return ::testing::AssertionFailure()
             << "element " << i << " is " << t.data<float>()[i] << ", expected " << values[i];
    }
  }
  return ::testing::AssertionSuccess();
}

const Tensor five_by_five = arange_f32({1, 1, 5, 5}, 1.0f);
const Tensor four_by_four = arange_f32({1, 1, 4, 4}, 1.0f);

TEST(MaxPool, SpecExamples) {
  EXPECT_TRUE(
      near_values(pool(OpKind::kMaxPool, five_by_five,
                       attributes({{"kernel_shape", I64{5, 5}}, {"pads", I64{2, 2, 2, 2}}})),
                  {1, 1, 5, 5}, {13, 14, 15, 15, 15, 18, 19, 20, 20, 20, 23, 24, 25,
                                 25, 25, 23, 24, 25, 25, 25, 23, 24, 25, 25, 25}));
  EXPECT_TRUE(near_values(pool(OpKind::kMaxPool, five_by_five,
                               attributes({{"kernel_shape", I64{2, 2}}, {"strides", I64{2, 2}}})),
                          {1, 1, 2, 2}, {7, 9, 17, 19}));
  EXPECT_TRUE(near_values(pool(OpKind::kMaxPool, four_by_four,
                               attributes({{"kernel_shape", I64{3, 3}},
                                           {"strides", I64{2, 2}},
                                           {"ceil_mode", std::int64_t{1}}})),
                          {1, 1, 2, 2}, {11, 12, 15, 16}));
  EXPECT_TRUE(near_values(pool(OpKind::kMaxPool, four_by_four,
                               attributes({{"kernel_shape", I64{2, 2}}, {"dilations", I64{2, 2}}})),
                          {1, 1, 2, 2}, {11, 12, 15, 16}));
  EXPECT_TRUE(near_values(pool(OpKind::kMaxPool, five_by_five,
                               attributes({{"kernel_shape", I64{3, 3}},
                                           {"strides", I64{2, 2}},
                                           {"auto_pad", std::string("SAME_UPPER")}})),
                          {1, 1, 3, 3}, {7, 9, 10, 17, 19, 20, 22, 24, 25}));
  EXPECT_TRUE(near_values(
      pool(OpKind::kMaxPool, five_by_five,
           attributes({{"kernel_shape", I64{2, 2}}, {"auto_pad", std::string("SAME_LOWER")}})),
      {1, 1, 5, 5},
      {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}));
  EXPECT_TRUE(near_values(
      pool(OpKind::kMaxPool, five_by_five,
           attributes({{"kernel_shape", I64{3, 3}}, {"auto_pad", std::string("VALID")}})),
      {1, 1, 3, 3}, {13, 14, 15, 18, 19, 20, 23, 24, 25}));
}

TEST(AveragePool, SpecExamples) {
  EXPECT_TRUE(near_values(
      pool(OpKind::kAveragePool, five_by_five,
           attributes({{"kernel_shape", I64{5, 5}}, {"pads", I64{2, 2, 2, 2}}})),
      {1, 1, 5, 5}, {7,    7.5, 8,    8.5, 9,    9.5, 10,   10.5, 11,   11.5, 12,   12.5, 13,
                     13.5, 14,  14.5, 15,  15.5, 16,  16.5, 17,   17.5, 18,   18.5, 19}));
  EXPECT_TRUE(near_values(
      pool(OpKind::kAveragePool, five_by_five,
           attributes({{"kernel_shape", I64{5, 5}},
                       {"pads", I64{2, 2, 2, 2}},
                       {"count_include_pad", std::int64_t{1}}})),
      {1, 1, 5, 5},
      {2.52f, 3.6f, 4.8f,  4.08f, 3.24f, 4.56f,  6.4f,  8.4f,  7.04f, 5.52f, 7.2f,  10,   13,
       10.8f, 8.4f, 6.96f, 9.6f,  12.4f, 10.24f, 7.92f, 6.12f, 8.4f,  10.8f, 8.88f, 6.84f}));
  EXPECT_TRUE(near_values(pool(OpKind::kAveragePool, five_by_five,
                               attributes({{"kernel_shape", I64{3, 3}},
                                           {"strides", I64{2, 2}},
                                           {"auto_pad", std::string("SAME_UPPER")}})),
                          {1, 1, 3, 3}, {4, 5.5, 7, 11.5, 13, 14.5, 19, 20.5, 22}));
  EXPECT_TRUE(near_values(pool(OpKind::kAveragePool, five_by_five,
                               attributes({{"kernel_shape", I64{2, 2}}, {"strides", I64{2, 2}}})),
                          {1, 1, 2, 2}, {4, 6, 14, 16}));
}

TEST(Pooling, OneDAndThreeDAgainstTorch) {
  const Tensor nine = arange_f32({1, 1, 9}, 1.0f);
  const ir::Attributes ceil_avg = attributes({{"kernel_shape", I64{3}},
                                              {"strides", I64{2}},
                                              {"pads", I64{1, 1}},
                                              {"ceil_mode", std::int64_t{1}}});
  EXPECT_TRUE(
      near_values(pool(OpKind::kAveragePool, nine, ceil_avg), {1, 1, 5}, {1.5, 3, 5, 7, 8.5}));
  ir::Attributes include = ceil_avg;
  include.set("count_include_pad", std::int64_t{1});
  EXPECT_TRUE(
      near_values(pool(OpKind::kAveragePool, nine, include), {1, 1, 5}, {1, 3, 5, 7, 5.6666667f}));
  EXPECT_TRUE(near_values(
      pool(OpKind::kMaxPool, nine,
           attributes({{"kernel_shape", I64{3}}, {"pads", I64{1, 1}}, {"dilations", I64{2}}})),
      {1, 1, 7}, {4, 5, 6, 7, 8, 9, 8}));
  const Tensor ten = arange_f32({1, 1, 10}, 1.0f);
  EXPECT_TRUE(near_values(pool(OpKind::kMaxPool, ten,
                               attributes({{"kernel_shape", I64{3}},
                                           {"strides", I64{3}},
                                           {"pads", I64{1, 1}},
                                           {"ceil_mode", std::int64_t{1}}})),
                          {1, 1, 4}, {2, 5, 8, 10}));
  const Tensor cube = arange_f32({1, 2, 3, 4, 5});
  EXPECT_TRUE(near_values(
      pool(OpKind::kMaxPool, cube,
           attributes({{"kernel_shape", I64{2, 3, 2}},
                       {"strides", I64{1, 2, 2}},
                       {"pads", I64{1, 1, 0, 1, 1, 0}}})),
      {1, 2, 4, 2, 2}, {6,  8,  16, 18, 26, 28, 36, 38, 46,  48,  56,  58,  46,  48,  56,  58,
                        66, 68, 76, 78, 86, 88, 96, 98, 106, 108, 116, 118, 106, 108, 116, 118}));
}

TEST(Pooling, Global) {
  const Tensor x = arange_f32({1, 1, 3, 3}, 1.0f);
  EXPECT_TRUE(near_values(pool(OpKind::kGlobalAveragePool, x), {1, 1, 1, 1}, {5}));
  EXPECT_TRUE(near_values(pool(OpKind::kGlobalMaxPool, x), {1, 1, 1, 1}, {9}));
  const Tensor batch = arange_f32({2, 3, 7});
  Tensor avg = pool(OpKind::kGlobalAveragePool, batch);
  ASSERT_EQ(avg.dims(), (Dims{2, 3, 1}));
  for (int p = 0; p < 6; ++p) EXPECT_FLOAT_EQ(avg.data<float>()[p], static_cast<float>(7 * p + 3));
}

TEST(Pooling, BlockedMatchesReferenceOnRandomCases) {
  std::mt19937 rng(21);
  const char* auto_pads[] = {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"};
  for (int trial = 0; trial < 60; ++trial) {
    const auto spatial = static_cast<std::size_t>(1 + trial % 3);
    Dims dims{std::uniform_int_distribution<std::int64_t>(1, 2)(rng),
              std::uniform_int_distribution<std::int64_t>(1, 5)(rng)};
    I64 kernel, strides, dilations, pads(2 * spatial);
    for (std::size_t a = 0; a < spatial; ++a) {
      kernel.push_back(std::uniform_int_distribution<std::int64_t>(1, 4)(rng));
      strides.push_back(std::uniform_int_distribution<std::int64_t>(1, 3)(rng));
      dilations.push_back(std::uniform_int_distribution<std::int64_t>(1, 2)(rng));
      // At least one whole window fits, whatever the padding mode.
      const std::int64_t window = (kernel.back() - 1) * dilations.back() + 1;
      dims.push_back(window +
                     std::uniform_int_distribution<std::int64_t>(0, spatial == 3 ? 4 : 12)(rng));
      pads[a] = std::uniform_int_distribution<std::int64_t>(0, kernel.back() - 1)(rng);
      pads[a + spatial] = std::uniform_int_distribution<std::int64_t>(0, kernel.back() - 1)(rng);
    }
    const Tensor x = random_f32(dims, rng);
    const OpKind op = trial % 2 ? OpKind::kMaxPool : OpKind::kAveragePool;
    ir::Attributes attrs = attributes({{"kernel_shape", kernel},
                                       {"strides", strides},
                                       {"pads", pads},
                                       {"auto_pad", std::string(auto_pads[trial / 2 % 4])},
                                       {"ceil_mode", std::int64_t{trial / 8 % 2}},
                                       {"count_include_pad", std::int64_t{trial / 3 % 2}}});
    if (op == OpKind::kMaxPool) attrs.set("dilations", dilations);
    SCOPED_TRACE(str_cat("trial ", trial, " input ", dims_to_string(dims)));
    pool(op, x, attrs);
    pool(trial % 2 ? OpKind::kGlobalMaxPool : OpKind::kGlobalAveragePool, x);
  }
}

// Kernel 2, stride 2 on the last axis takes the blocked tactic's paired path: four outputs at
// a time, the rest one by one. Widths around multiples of 8, padding and ceil_mode move where
// the regular windows start and end.
TEST(Pooling, BlockedPairedWindowsMatchReference) {
  std::mt19937 rng(5);
  for (std::int64_t width : {2, 3, 7, 8, 9, 16, 17, 31, 32, 33}) {
    for (int variant = 0; variant < 4; ++variant) {
      const std::int64_t pad_left = variant & 1, pad_right = variant >> 1;
      const Tensor x = random_f32({1, 3, 5, width}, rng);
      for (OpKind op : {OpKind::kMaxPool, OpKind::kAveragePool}) {
        SCOPED_TRACE(str_cat(op_name(op), " width ", width, " pads ", pad_left, ",", pad_right));
        pool(op, x,
             attributes({{"kernel_shape", I64{2, 2}},
                         {"strides", I64{2, 2}},
                         {"pads", I64{0, pad_left, 1, pad_right}},
                         {"ceil_mode", std::int64_t{variant == 3}},
                         {"count_include_pad", std::int64_t{variant == 2}}}));
        pool(op, x, attributes({{"kernel_shape", I64{1, 2}}, {"strides", I64{1, 2}}}));
      }
    }
  }
}

TEST(Pooling, ShapeInference) {
  ir::Node node;
  node.op = OpKind::kMaxPool;
  node.name = "pool";
  node.attrs = attributes(
      {{"kernel_shape", I64{3}}, {"strides", I64{2}}, {"auto_pad", std::string("SAME_UPPER")}});
  node.outputs.assign(1, nullptr);
  ir::ValueInfo x;
  x.shape = {Dim::symbolic("batch"), Dim::known(80), Dim::symbolic("T")};
  std::vector<ir::InferredOutput> out;
  ASSERT_TRUE(ir::infer_outputs(node, {&x, 1}, out).is_ok());
  EXPECT_EQ(out[0].shape, (ir::SymShape{Dim::symbolic("batch"), Dim::known(80), Dim{}}));
  x.shape[2] = Dim::known(101);
  ASSERT_TRUE(ir::infer_outputs(node, {&x, 1}, out).is_ok());
  EXPECT_EQ(out[0].shape[2], Dim::known(51));
  node.attrs = attributes({{"kernel_shape", I64{1}}});
  x.shape[2] = Dim::symbolic("T");
  ASSERT_TRUE(ir::infer_outputs(node, {&x, 1}, out).is_ok());
  EXPECT_EQ(out[0].shape[2], Dim::symbolic("T"));
  // Errors name the node: kernel larger than the input, missing kernel_shape, wrong rank.
  node.attrs = attributes({{"kernel_shape", I64{7}}});
  x.shape[2] = Dim::known(5);
  Status too_big = ir::infer_outputs(node, {&x, 1}, out);
  EXPECT_NE(too_big.message().find("node 'pool' (MaxPool)"), std::string::npos)
      << too_big.message();
  node.attrs = {};
  EXPECT_FALSE(ir::infer_outputs(node, {&x, 1}, out).is_ok());
  node.attrs = attributes({{"kernel_shape", I64{2, 2}}});
  EXPECT_FALSE(ir::infer_outputs(node, {&x, 1}, out).is_ok());
}

// MaxPool's Indices output and i8/u8 inputs run the reference kernel only (the ONNX node tests
// need both); the fast tactics must not claim them.
TEST(Pooling, IndicesOutputAndIntegerInputsRunTheReferenceOnly) {
  const Tensor x = arange_f32({1, 1, 4});
  TestNode with_indices =
      make_node(OpKind::kMaxPool, {&x}, 2, attributes({{"kernel_shape", I64{2}}}));
  const auto indices_tactics = backends::cpu::tactics_for(*with_indices.node);
  ASSERT_EQ(indices_tactics.size(), 1u);
  EXPECT_EQ(indices_tactics[0].id, backends::kReferenceTactic);
  const Tensor ints = Tensor::zeros(DType::kI8, {1, 1, 4});
  TestNode int_pool =
      make_node(OpKind::kMaxPool, {&ints}, 1, attributes({{"kernel_shape", I64{2}}}));
  const auto int_tactics = backends::cpu::tactics_for(*int_pool.node);
  ASSERT_EQ(int_tactics.size(), 1u);
  EXPECT_EQ(int_tactics[0].id, backends::kReferenceTactic);
}

}  // namespace
}  // namespace voxrt::testing
