// Gemm / MatMul / FusedMatMul: every tactic against the reference, the reference against PyTorch.
#include <cmath>

#include "dense_test_util.h"

namespace voxrt::dense_test {
namespace {

using ir::OpKind;

TEST(MatMul, BroadcastingAndOneDimensionalOperands) {
  const std::vector<std::pair<Dims, Dims>> shapes{
      {{3, 5}, {5, 7}},
      {{2, 3, 5}, {5, 7}},
      {{2, 1, 3, 5}, {4, 5, 6}},
      {{4, 3, 5}, {4, 5, 6}},
      {{1, 3, 5}, {2, 5, 4}},
      {{3, 3, 5}, {1, 5, 4}},
      {{5}, {5, 7}},
      {{3, 5}, {5}},
      {{5}, {5}},
      {{2, 3, 5}, {5}},
      {{5}, {2, 5, 3}},
      {{37, 131}, {131, 257}},
      {{2, 2, 3, 4}, {2, 1, 4, 3}},
  };
  std::uint32_t seed = 1;
  for (const auto& [a, b] : shapes) {
    SCOPED_TRACE(dims_to_string(a) + " x " + dims_to_string(b));
    for (bool constant_b : {false, true}) {
      Tensor bt = random_tensor(b, seed++);
      auto one = make_node(OpKind::kMatMul, {runtime(random_tensor(a, seed++)),
                                             constant_b ? constant(bt) : runtime(bt)});
      expect_tactics_match_reference(*one);
    }
  }
}

TEST(MatMul, SymbolicBatchKeepsKernelsShapeAgnostic) {
  auto one = make_node(OpKind::kMatMul, {runtime(random_tensor({3, 11, 64}, 1), true),
                                         constant(random_tensor({64, 48}, 2))});
  EXPECT_EQ(ir::sym_shape_to_string(one->node->outputs[0]->shape), "batchx11x48");
  expect_tactics_match_reference(*one);
  // A kernel created once serves other batch sizes (the per-shape cache).
  for (const auto& tactic : backends::cpu::tactics_for(*one->node)) {
    auto kernel = backends::cpu::create_kernel(*one->node, tactic.id);
    ASSERT_TRUE(kernel.has_value());
    ThreadPool pool(2);
    for (std::int64_t batch : {1, 5, 3}) {
      one->inputs[0] = random_tensor({batch, 11, 64}, static_cast<std::uint32_t>(batch));
      auto reference = backends::cpu::create_kernel(*one->node, 0);
      Expected<Tensor> want = run_kernel(*one, **reference, pool);
      Expected<Tensor> got = run_kernel(*one, **kernel, pool);
      ASSERT_TRUE(want.has_value() && got.has_value());
      EXPECT_TRUE(all_close(*want, *got)) << tactic.name << " batch " << batch;
    }
  }
}

TEST(FusedMatMul, TransposesBiasAndActivations) {
  // "leaky_relu+clamp": a leaky ReLU, then the clamp of a Max / Min that followed it.
  const std::vector<std::string> activations{"none",     "relu",    "leaky_relu",
                                             "clip",     "sigmoid", "tanh",
                                             "gelu_erf", "silu",    "leaky_relu+clamp"};
  std::uint32_t seed = 50;
  for (const std::string& activation : activations) {
    for (int trans = 0; trans < 4; ++trans) {
      const bool ta = trans & 1, tb = trans & 2;
      SCOPED_TRACE(activation + " trans_a=" + std::to_string(ta) +
                   " trans_b=" + std::to_string(tb));
      const std::int64_t m = 9, k = 13, n = 17;
      Dims a = ta ? Dims{2, k, m} : Dims{2, m, k};
      Dims b = tb ? Dims{n, k} : Dims{k, n};
      const bool clamped = activation == "leaky_relu+clamp";
      ir::Attributes attrs =
          attrs_of({{"trans_a", std::int64_t{ta}},
                    {"trans_b", std::int64_t{tb}},
                    {"activation", clamped ? std::string("leaky_relu") : activation},
                    {"activation_alpha", -0.25f},
                    {"activation_beta", 0.5f}});
      if (activation == "leaky_relu" || clamped) attrs.set("activation_alpha", 0.1f);
      if (clamped) {
        attrs.set("activation_clamp_min", -0.05f);
        attrs.set("activation_clamp_max", 0.8f);
      }
      for (bool with_bias : {false, true}) {
        std::vector<Operand> operands{runtime(random_tensor(a, seed++)),
                                      constant(random_tensor(b, seed++))};
        if (with_bias) operands.push_back(constant(random_tensor({n}, seed++)));
        auto one = make_node(OpKind::kFusedMatMul, operands, attrs);
        expect_tactics_match_reference(*one);
      }
    }
  }
}

TEST(FusedMatMul, PanelTailsRowBlocksAndTwoThreads) {
  // Rows in blocks of six and their tails, in groups of 24 (30 rows: a second group); columns in
  // panels of 64 and a partial one; depth in slices of 64 and a partial one (150 = 64 + 64 + 22).
  std::uint32_t seed = 90;
  for (std::int64_t m : {1, 5, 13, 16, 30})
    for (std::int64_t n : {64, 130})
      for (std::int64_t k : {37, 150}) {
        SCOPED_TRACE("m=" + std::to_string(m) + " n=" + std::to_string(n) +
                     " k=" + std::to_string(k));
        auto one = make_node(
            OpKind::kFusedMatMul,
            {runtime(random_tensor({1, m, k}, seed++)), constant(random_tensor({k, n}, seed++)),
             constant(random_tensor({n}, seed++))},
            attrs_of({{"activation", std::string("silu")}}));
        auto want = run_tactic(*one, 0, 1);
        ASSERT_TRUE(want.has_value());
        for (const auto& tactic : backends::cpu::tactics_for(*one->node)) {
          auto got = run_tactic(*one, tactic.id, 2);
          ASSERT_TRUE(got.has_value()) << tactic.name << ": " << got.status().to_string();
          EXPECT_TRUE(all_close(*want, *got)) << tactic.name;
        }
      }
}

TEST(Gemm, AllTransposeAlphaBetaAndCCombinations) {
  const std::int64_t m = 7, k = 10, n = 12;
  const std::vector<Dims> c_shapes{{}, {n}, {1, n}, {m, 1}, {m, n}, {1}, {1, 1}};
  std::uint32_t seed = 200;
  for (int trans = 0; trans < 4; ++trans) {
    const bool ta = trans & 1, tb = trans & 2;
    for (auto [alpha, beta] :
         {std::pair{1.0f, 1.0f}, std::pair{0.7f, -1.3f}, std::pair{-2.0f, 0.0f}}) {
      for (std::size_t ci = 0; ci <= c_shapes.size(); ++ci) {
        for (bool constant_operands : {false, true}) {
          SCOPED_TRACE(str_cat("transA=", ta, " transB=", tb, " alpha=", alpha, " beta=", beta,
                               " C=", ci == c_shapes.size() ? "none" : dims_to_string(c_shapes[ci]),
                               " constant=", constant_operands));
          Tensor bt = random_tensor(tb ? Dims{n, k} : Dims{k, n}, seed++);
          std::vector<Operand> operands{
              runtime(random_tensor(ta ? Dims{k, m} : Dims{m, k}, seed++)),
              constant_operands ? constant(bt) : runtime(bt)};
          if (ci < c_shapes.size()) {
            Tensor ct = random_tensor(c_shapes[ci], seed++);
            if (c_shapes[ci].empty()) ct = Tensor::scalar_f32(0.37f);
            operands.push_back(constant_operands ? constant(ct) : runtime(ct));
          }
          auto one = make_node(OpKind::kGemm, operands,
                               attrs_of({{"transA", std::int64_t{ta}},
                                         {"transB", std::int64_t{tb}},
                                         {"alpha", alpha},
                                         {"beta", beta}}));
          expect_tactics_match_reference(*one);
        }
      }
    }
  }
}

TEST(Gemm, DeepSpeech2SizedProjection) {
  // [T, 1312] x [1312, 1536] with bias: the GRU input projection of DS2.
  auto one = make_node(
      OpKind::kGemm,
      {runtime(random_tensor({19, 1312}, 1)),
       constant(random_tensor({1536, 1312}, 2, -0.05f, 0.05f)), constant(random_tensor({1536}, 3))},
      attrs_of({{"transB", std::int64_t{1}}}));
  expect_tactics_match_reference(*one, 1e-4, 1e-4);
}

Tensor sequence(const Dims& dims, double scale, double step, double phase, bool cosine) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (std::int64_t i = 0; i < t.element_count(); ++i) {
    const double arg = step * static_cast<double>(i) + phase;
    t.data<float>()[i] = static_cast<float>(scale * (cosine ? std::cos(arg) : std::sin(arg)));
  }
  return t;
}

TEST(MatMul, ReferenceMatchesPyTorch) {
  // torch.matmul(a [2,1,3,5], b [4,5,2]), a[i] = sin(0.37 i + 0.1), b[i] = 0.5 cos(0.11 i).
  auto one = make_node(OpKind::kMatMul, {runtime(sequence({2, 1, 3, 5}, 1.0, 0.37, 0.1, false)),
                                         runtime(sequence({4, 5, 2}, 0.5, 0.11, 0.0, true))});
  Expected<Tensor> y = run_tactic(*one, 0, 1);
  ASSERT_TRUE(y.has_value());
  ASSERT_EQ(y->dims(), (Dims{2, 4, 3, 2}));
  double sum = 0;
  for (float v : y->span<float>()) sum += v;
  EXPECT_NEAR(sum, -1.5886078621008954, 1e-5);
  const std::pair<int, double> samples[] = {{0, 1.2958873100963022},
                                            {7, -0.3660344487381911},
                                            {23, 1.5137699808535323},
                                            {47, 0.7865911048876406}};
  for (auto [index, value] : samples) EXPECT_NEAR(y->data<float>()[index], value, 1e-5) << index;
}

TEST(FusedMatMul, GeluMatchesPyTorch) {
  // torch.nn.functional.gelu(a @ W + bias), a [3,4], W [4,5] as above, bias[i] = 0.1 i - 0.2.
  Tensor bias = Tensor::uninitialized(DType::kF32, {5});
  for (int i = 0; i < 5; ++i) bias.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.2f;
  auto one = make_node(OpKind::kFusedMatMul,
                       {runtime(sequence({3, 4}, 1.0, 0.37, 0.1, false)),
                        constant(sequence({4, 5}, 0.5, 0.11, 0.0, true)), constant(bias)},
                       attrs_of({{"activation", std::string("gelu_erf")}}));
  const std::vector<float> torch_values{
      0.09955041019953544f,   0.09771653670460284f, 0.09381031895808986f,  0.08868007884817015f,
      0.08317129749809547f,   0.6765533015175509f,  0.6841688902420534f,   0.6798352425637282f,
      0.664904267735006f,     0.6409565091284162f,  -0.13487334256508637f, -0.08390785432777419f,
      -0.005954256650666689f, 0.09990890336288996f, 0.23208651219860474f};
  const Tensor want = Tensor::from_vector<float>({3, 5}, torch_values);
  for (const auto& tactic : backends::cpu::tactics_for(*one->node)) {
    Expected<Tensor> y = run_tactic(*one, tactic.id, 1);
    ASSERT_TRUE(y.has_value());
    EXPECT_TRUE(all_close(want, *y, 1e-5, 1e-5)) << tactic.name;
  }
}

TEST(MatMul, ConcurrentCallsGiveIdenticalResults) {
  auto one = make_node(OpKind::kFusedMatMul,
                       {runtime(random_tensor({23, 96}, 1), true),
                        constant(random_tensor({96, 130}, 2)), constant(random_tensor({130}, 3))},
                       attrs_of({{"activation", std::string("tanh")}}));
  expect_concurrent_calls_identical(*one);
  auto gemm = make_node(OpKind::kGemm,
                        {runtime(random_tensor({23, 96}, 1)), runtime(random_tensor({130, 96}, 2)),
                         runtime(random_tensor({23, 130}, 3))},
                        attrs_of({{"transB", std::int64_t{1}}, {"alpha", 0.5f}, {"beta", 2.0f}}));
  expect_concurrent_calls_identical(*gemm);
}

TEST(MatMul, EmptyInnerDimension) {
  auto one =
      make_node(OpKind::kGemm,
                {runtime(Tensor::zeros(DType::kF32, {3, 0})),
                 runtime(Tensor::zeros(DType::kF32, {0, 4})), runtime(random_tensor({4}, 1))},
                attrs_of({{"beta", 2.0f}}));
  expect_tactics_match_reference(*one);
}

}  // namespace
}  // namespace voxrt::dense_test
