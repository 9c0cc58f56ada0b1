// INT8 layers as the builder marks them: every INT8 tactic against the INT8 reference on the same
// rounded values (our VNNI GEMM to the bit, oneDNN's and the recurrent ones within float
// rounding), and the INT8 reference against the FP32 one within the quantization error.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/quantized/int8_gemm_amx.h"
#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/layer_precision.h"
#include "unit/dense/dense_test_util.h"
#include "unit/recurrent/recurrent_harness.h"

namespace voxrt {
namespace {

using backends::cpu::quantized::ActivationQuantization;
using dense_test::absent;
using dense_test::attrs_of;
using dense_test::constant;
using dense_test::Ints;
using dense_test::make_node;
using dense_test::random_tensor;
using dense_test::runtime;

// Marks `node` int8 with the input quantization a calibration would give [lo, hi].
void mark_int8(ir::Node& node, double lo, double hi, bool symmetric) {
  const ActivationQuantization q = symmetric ? ActivationQuantization::symmetric(std::max(-lo, hi))
                                             : ActivationQuantization::asymmetric(lo, hi);
  node.attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
  node.attrs.set(backends::cpu::quantized::kInputScaleAttr, q.scale);
  node.attrs.set(backends::cpu::quantized::kInputZeroPointAttr,
                 static_cast<std::int64_t>(q.zero_point));
}

// sqrt(sum (a - b)^2 / sum b^2)
double relative_rms_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < a.element_count(); ++i) {
    const double d = a.data<float>()[i] - b.data<float>()[i];
    num += d * d;
    den += double{b.data<float>()[i]} * b.data<float>()[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// The node's INT8 tactics against its INT8 reference (`exact`: to the bit for ours), and the
// INT8 reference against FP32 (the node unmarked) within `max_error` relative RMS.
void expect_int8_layer(dense_test::OneNode& one, double max_error) {
  const auto tactics = backends::cpu::tactics_for(*one.node);
  ASSERT_GE(tactics.size(), 2u);
  ASSERT_EQ(tactics[0].name, "reference_int8");
  Expected<Tensor> reference = dense_test::run_tactic(one, backends::kReferenceTactic, 1);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  int int8_tactics = 0;
  for (const auto& tactic : tactics) {
    if (!tactic.name.ends_with("_int8")) continue;
    ++int8_tactics;
    for (int threads : {1, 2}) {
      Expected<Tensor> got = dense_test::run_tactic(one, tactic.id, threads);
      ASSERT_TRUE(got.has_value()) << tactic.name << ": " << got.status().to_string();
      if (tactic.name == "vnni_int8" || tactic.name.starts_with("amx_")) {
        EXPECT_EQ(std::memcmp(got->raw_data(), reference->raw_data(), got->size_bytes()), 0)
            << tactic.name << " differs from the reference, " << threads << " threads";
      } else {
        EXPECT_TRUE(dense_test::all_close(*reference, *got, 1e-5, 1e-5))
            << tactic.name << ", " << threads << " threads";
      }
    }
  }
  EXPECT_GE(int8_tactics, (backends::cpu::quantized::vnni_available() ? 3 : 1) +
                              (backends::cpu::quantized::amx_int8_available() ? 2 : 0));
  ir::Attributes marked = one.node->attrs;
  one.node->attrs.erase(backends::kLayerPrecisionAttr);
  Expected<Tensor> fp32 = dense_test::run_tactic(one, backends::kReferenceTactic, 1);
  one.node->attrs = marked;
  ASSERT_TRUE(fp32.has_value());
  const double error = relative_rms_error(*reference, *fp32);
  EXPECT_LT(error, max_error) << "int8 vs fp32";
  EXPECT_GT(error, 0.0) << "the int8 reference must round something";
}

TEST(Int8Dense, MatMulGemmFusedMatMul) {
  {
    auto one = make_node(ir::OpKind::kMatMul, {runtime(random_tensor({2, 7, 64}, 1)),
                                               constant(random_tensor({64, 45}, 2))});
    mark_int8(*one->node, -1, 1, true);
    expect_int8_layer(*one, 0.02);
  }
  {
    // transB, alpha, beta and a [1, N] C; the input one-sided (asymmetric).
    auto one =
        make_node(ir::OpKind::kGemm,
                  {runtime(random_tensor({16, 80}, 3, 0.0f, 3.0f)),
                   constant(random_tensor({29, 80}, 4)), constant(random_tensor({1, 29}, 5))},
                  attrs_of({{"transB", std::int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
    mark_int8(*one->node, 0, 3, false);
    expect_int8_layer(*one, 0.02);
  }
  {
    auto one = make_node(ir::OpKind::kFusedMatMul,
                         {runtime(random_tensor({5, 3, 130}, 6)),
                          constant(random_tensor({130, 70}, 7)), constant(random_tensor({70}, 8))},
                         attrs_of({{"activation", std::string("relu")}}));
    mark_int8(*one->node, -1, 1, true);
    expect_int8_layer(*one, 0.03);
  }
}

// A streaming Conformer chunk's projections: 16 rows against constant weights (the few-rows case
// the GEMM splits by panels), with the FFN's fused Swish and GELU and a tail of columns that is
// not a whole 16-lane vector, and the convolution module's pointwise (1 x 1) convolution over 16
// frames. The activations run in one vectorized pass after the GEMM, the same for every INT8
// tactic, so ours must still equal the reference to the bit.
TEST(Int8Dense, ConformerChunkProjectionsWithFusedActivations) {
  for (const std::int64_t rows : {16, 5}) {  // 5 x 1000 outputs end in a partial vector
    for (const char* activation : {"silu", "gelu_erf", "sigmoid", "tanh"}) {
      auto one = make_node(ir::OpKind::kFusedMatMul,
                           {runtime(random_tensor({1, rows, 256}, 21)),
                            constant(random_tensor({256, 1000}, 22, -0.1f, 0.1f)),
                            constant(random_tensor({1000}, 23))},
                           attrs_of({{"activation", std::string(activation)}}));
      mark_int8(*one->node, -2, 2, true);
      SCOPED_TRACE(str_cat(activation, ", ", rows, " rows"));
      expect_int8_layer(*one, 0.02);
    }
  }
  auto pointwise =
      make_node(ir::OpKind::kConv, {runtime(random_tensor({1, 256, 16}, 24)),
                                    constant(random_tensor({512, 256, 1}, 25, -0.1f, 0.1f)),
                                    constant(random_tensor({512}, 26))});
  mark_int8(*pointwise->node, -2, 2, true);
  expect_int8_layer(*pointwise, 0.02);
}

// A product with several 16-row tiles and 16 column groups, which amx_int8 splits over the
// 2-thread pool, with a depth that is not whole 64-byte steps in the second case (the padded
// copy of A, then the split).
TEST(Int8Dense, LargeProductsSplitOverThePool) {
  for (const std::int64_t depth : {1024, 1000}) {
    auto one = make_node(ir::OpKind::kFusedMatMul,
                         {runtime(random_tensor({32, depth}, 31)),
                          constant(random_tensor({depth, 1024}, 32, -0.05f, 0.05f)),
                          constant(random_tensor({1024}, 33))},
                         attrs_of({{"activation", std::string("relu")}}));
    mark_int8(*one->node, -2, 2, true);
    SCOPED_TRACE(str_cat("depth ", depth));
    expect_int8_layer(*one, 0.03);
  }
}

TEST(Int8Dense, ConvolutionsWithPaddingStridesAndOneSidedInputs) {
  {
    // 2-D, padding and stride, the input one-sided so the zero point is 0 and padding exact.
    auto one =
        make_node(ir::OpKind::kConv,
                  {runtime(random_tensor({2, 3, 11, 9}, 11, 0.0f, 2.0f)),
                   constant(random_tensor({8, 3, 3, 3}, 12)), constant(random_tensor({8}, 13))},
                  attrs_of({{"pads", Ints{1, 1, 1, 1}}, {"strides", Ints{2, 1}}}));
    mark_int8(*one->node, 0, 2, false);
    expect_int8_layer(*one, 0.02);
  }
  {
    // Symmetric input: padding is the zero point 128, which must still stand for 0.
    auto one =
        make_node(ir::OpKind::kFusedConv,
                  {runtime(random_tensor({1, 32, 20, 4}, 14)),
                   constant(random_tensor({32, 32, 5, 3}, 15)), constant(random_tensor({32}, 16))},
                  attrs_of({{"pads", Ints{2, 1, 2, 1}},
                            {"activation", std::string("clip")},
                            {"activation_params", std::vector<float>{0.0f, 20.0f}}}));
    mark_int8(*one->node, -1, 1, true);
    expect_int8_layer(*one, 0.03);
  }
  {
    auto one =
        make_node(ir::OpKind::kConv,
                  {runtime(random_tensor({1, 4, 50}, 17)), constant(random_tensor({6, 4, 7}, 18))},
                  attrs_of({{"pads", Ints{3, 3}}, {"dilations", Ints{2}}}));
    mark_int8(*one->node, -1, 1, false);
    expect_int8_layer(*one, 0.02);
  }
  {
    // 1 x 1 over a 2-D image, batch 2, channels not a whole quad: the transposing fast path
    // (its rows padded with the zero point), against the reference's direct convolution.
    auto one = make_node(ir::OpKind::kConv, {runtime(random_tensor({2, 7, 5, 9}, 19)),
                                             constant(random_tensor({70, 7, 1, 1}, 20)),
                                             constant(random_tensor({70}, 27))});
    mark_int8(*one->node, -1, 1, true);
    expect_int8_layer(*one, 0.02);
  }
  {
    // 1 x 1 with padding: not pointwise in the fast path's sense (more positions than inputs),
    // so the general unfolding, whose padded positions see only the bias.
    auto one = make_node(ir::OpKind::kConv,
                         {runtime(random_tensor({1, 9, 12}, 28)),
                          constant(random_tensor({5, 9, 1}, 29)), constant(random_tensor({5}, 30))},
                         attrs_of({{"pads", Ints{2, 1}}}));
    mark_int8(*one->node, -1, 1, true);
    expect_int8_layer(*one, 0.02);
  }
}

TEST(Int8Dense, UnmarkedOrUncalibratedLayersGetNoInt8Tactics) {
  auto one = make_node(ir::OpKind::kMatMul,
                       {runtime(random_tensor({3, 8}, 1)), constant(random_tensor({8, 4}, 2))});
  EXPECT_EQ(backends::cpu::tactics_for(*one->node)[0].name, "reference");
  one->node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
  EXPECT_EQ(backends::cpu::tactics_for(*one->node)[0].name, "reference") << "no input scale";
  // Runtime weights cannot be quantized once.
  auto runtime_b = make_node(
      ir::OpKind::kMatMul, {runtime(random_tensor({3, 8}, 1)), runtime(random_tensor({8, 4}, 2))});
  mark_int8(*runtime_b->node, -1, 1, true);
  EXPECT_EQ(backends::cpu::tactics_for(*runtime_b->node)[0].name, "reference");
}

// ---- recurrent -------------------------------------------------------------------------------

using recurrent_test::RecurrentCase;
using recurrent_test::RecurrentFixture;

void expect_int8_recurrent(const RecurrentCase& c, double max_error) {
  SCOPED_TRACE(c.describe());
  RecurrentFixture f;
  recurrent_test::build_fixture(c, f);
  // X in [-1, 1]: symmetric.
  f.node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
  const auto q = ActivationQuantization::symmetric(1.0);
  f.node->attrs.set(backends::cpu::quantized::kInputScaleAttr, q.scale);
  f.node->attrs.set(backends::cpu::quantized::kInputZeroPointAttr, std::int64_t{128});
  const auto tactics = backends::cpu::tactics_for(*f.node);
  ASSERT_FALSE(tactics.empty());
  ASSERT_EQ(tactics[0].name, "reference_int8");
  auto reference = recurrent_test::run_tactic(f, backends::kReferenceTactic, 1);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  int int8_tactics = 0;
  for (const auto& tactic : tactics) {
    if (!tactic.name.ends_with("_int8") || tactic.id == backends::kReferenceTactic) continue;
    ++int8_tactics;
    for (int threads : {1, 2}) {
      auto got = recurrent_test::run_tactic(f, tactic.id, threads);
      ASSERT_TRUE(got.has_value()) << tactic.name << ": " << got.status().to_string();
      for (std::size_t o = 0; o < got->size(); ++o) {
        if (!(*got)[o].is_valid()) continue;
        // Float rounding (vector exp/tanh, sum order) can move a state across a rounding
        // boundary of its INT8 operand now and then: a step of one level, not more.
        EXPECT_LE(recurrent_test::worst_error_ratio((*got)[o], (*reference)[o], 2e-3, 2e-3), 1.0)
            << tactic.name << " output " << o << ", " << threads << " threads";
      }
    }
  }
  EXPECT_GE(int8_tactics, backends::cpu::quantized::vnni_available() ? 2 : 0);
  f.node->attrs.erase(backends::kLayerPrecisionAttr);
  auto fp32 = recurrent_test::run_tactic(f, backends::kReferenceTactic, 1);
  ASSERT_TRUE(fp32.has_value());
  const double error = relative_rms_error((*reference)[0], (*fp32)[0]);
  EXPECT_LT(error, max_error) << "int8 vs fp32";
  EXPECT_GT(error, 0.0);
}

TEST(Int8Recurrent, GruLstmRnnAgainstTheirReference) {
  if (!backends::cpu::quantized::vnni_available()) GTEST_SKIP() << "no AVX-512 VNNI";
  RecurrentCase gru;
  gru.hidden = 64;
  gru.input = 40;
  gru.seq = 9;
  gru.batch = 1;
  gru.initial_states = true;
  expect_int8_recurrent(gru, 0.03);
  gru.linear_before_reset = 1;
  gru.batch = 3;
  gru.lengths = {9, 4, 7};
  expect_int8_recurrent(gru, 0.03);
  RecurrentCase lstm;
  lstm.op = ir::OpKind::kLSTM;
  lstm.hidden = 50;  // not a multiple of 8: padded units
  lstm.input = 30;
  lstm.seq = 7;
  lstm.batch = 2;
  lstm.peepholes = true;
  lstm.direction = "bidirectional";
  expect_int8_recurrent(lstm, 0.03);
  RecurrentCase rnn;
  rnn.op = ir::OpKind::kRNN;
  rnn.hidden = 17;
  rnn.input = 9;
  rnn.seq = 5;
  rnn.batch = 8;
  rnn.direction = "reverse";
  expect_int8_recurrent(rnn, 0.03);
}

}  // namespace
}  // namespace voxrt
