// Conv / FusedConv: every tactic against the reference on odd shapes, and the reference against
// hand-computed and PyTorch-computed values.
#include <cmath>

#include "backends/cpu/dense/dense_common.h"
#include "dense_test_util.h"

namespace voxrt::dense_test {
namespace {

using ir::OpKind;

struct ConvCase {
  std::string label;
  Dims x, w;
  ir::Attributes attrs;
  bool bias = true;
};

std::vector<ConvCase> conv_cases() {
  return {
      {"basic_2d", {2, 3, 7, 9}, {5, 3, 3, 3}, attrs_of({{"pads", Ints{1, 1, 1, 1}}})},
      {"grouped_strided_asymmetric",
       {1, 6, 8, 7},
       {4, 3, 3, 2},
       attrs_of({{"group", std::int64_t{2}}, {"strides", Ints{2, 1}}, {"pads", Ints{0, 1, 2, 0}}})},
      {"depthwise_dilated",
       {2, 8, 9, 11},
       {8, 1, 3, 3},
       attrs_of(
           {{"group", std::int64_t{8}}, {"dilations", Ints{2, 2}}, {"pads", Ints{2, 2, 2, 2}}})},
      {"same_upper_stride2",
       {1, 3, 10, 9},
       {4, 3, 4, 3},
       attrs_of({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{2, 2}}})},
      {"same_lower",
       {1, 3, 10, 9},
       {4, 3, 4, 2},
       attrs_of({{"auto_pad", std::string("SAME_LOWER")}}),
       false},
      {"valid_stride3",
       {2, 2, 13, 11},
       {3, 2, 3, 5},
       attrs_of({{"auto_pad", std::string("VALID")}, {"strides", Ints{3, 2}}})},
      {"conv1d", {2, 5, 23}, {7, 5, 5}, attrs_of({{"strides", Ints{2}}, {"pads", Ints{2, 1}}})},
      {"conv1d_depthwise_conformer",
       {1, 16, 30},
       {16, 1, 15},
       attrs_of({{"group", std::int64_t{16}}, {"pads", Ints{7, 7}}})},
      // depthwise_avx512's edges: a streaming chunk against its cached frames (no padding), a
      // stride, a dilation with asymmetric pads, and more than 16 outputs (a partial vector).
      {"conv1d_depthwise_cached_frames",
       {2, 32, 46},
       {32, 1, 31},
       attrs_of({{"group", std::int64_t{32}}})},
      {"conv1d_depthwise_strided_dilated",
       {1, 8, 41},
       {8, 1, 5},
       attrs_of({{"group", std::int64_t{8}},
                 {"strides", Ints{2}},
                 {"dilations", Ints{3}},
                 {"pads", Ints{4, 1}}})},
      {"pointwise_1x1", {2, 16, 5, 7}, {8, 16, 1, 1}, {}},
      // pointwise_avx512: Conformer's 1-D pointwise convolutions (more than one panel of output
      // channels, a partial one, time steps in blocks of six and a tail).
      {"conv1d_pointwise_conformer", {2, 40, 16}, {130, 40, 1}, {}},
      {"conv3d", {1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, attrs_of({{"pads", Ints{1, 1, 1, 1, 1, 1}}})},
      {"kernel_shape_attr", {1, 3, 6, 6}, {2, 3, 3, 3}, attrs_of({{"kernel_shape", Ints{3, 3}}})},
      // direct_avx2's edges: two 32-channel blocks (the second partial), output widths 5 and 1
      // (register blocks of 3 plus a remainder of 2 or 1), dilation, strides, asymmetric pads
      // and a stride that leaves input columns unread.
      {"direct_two_channel_blocks",
       {2, 2, 9, 8},
       {40, 2, 3, 4},
       attrs_of({{"strides", Ints{1, 2}}, {"dilations", Ints{2, 1}}, {"pads", Ints{1, 2, 0, 3}}})},
      {"direct_one_column", {1, 1, 7, 4}, {33, 1, 2, 4}, attrs_of({{"strides", Ints{3, 3}}})},
      // few_positions' edges: a short-time Fourier transform as a strided 1-D convolution (the
      // openWakeWord melspectrogram's shape, 5 frames, 257 rows: a partial row block), two
      // images with dilation and padding (fields reaching past the input), 7 positions (a
      // block of 5 or 4 and a remainder), and a depth that is no multiple of 16.
      {"few_positions_stft", {1, 1, 1280}, {257, 1, 512}, attrs_of({{"strides", Ints{160}}})},
      {"few_positions_dilated_padded",
       {2, 3, 40},
       {6, 3, 9},
       attrs_of({{"strides", Ints{16}}, {"dilations", Ints{2}}, {"pads", Ints{4, 11}}})},
      {"few_positions_seven", {1, 2, 3, 9}, {9, 2, 3, 3}, attrs_of({{"pads", Ints{0, 0, 0, 1}}})},
  };
}

TEST(Conv, EveryTacticMatchesReference) {
  std::uint32_t seed = 1;
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE(c.label);
    for (bool symbolic_batch : {false, true}) {
      std::vector<Operand> operands{runtime(random_tensor(c.x, seed++), symbolic_batch),
                                    constant(random_tensor(c.w, seed++))};
      if (c.bias) operands.push_back(constant(random_tensor({c.w[0]}, seed++)));
      auto one = make_node(OpKind::kConv, operands, c.attrs);
      expect_tactics_match_reference(*one);
    }
  }
}

TEST(Conv, DeepSpeech2FrontEnd) {
  // Conv2d(1, 32, (41, 11), stride (2, 2), padding (20, 5)) on a 161-bin spectrogram, then the
  // second DS2 layer Conv2d(32, 32, (21, 11), (2, 1), (10, 5)), both with Hardtanh(0, 20).
  ir::Attributes first = attrs_of({{"strides", Ints{2, 2}},
                                   {"pads", Ints{20, 5, 20, 5}},
                                   {"activation", std::string("clip")},
                                   {"activation_alpha", 0.0f},
                                   {"activation_beta", 20.0f}});
  auto one =
      make_node(OpKind::kFusedConv,
                {runtime(random_tensor({1, 1, 161, 37}, 11)),
                 constant(random_tensor({32, 1, 41, 11}, 12)), constant(random_tensor({32}, 13))},
                first);
  ASSERT_EQ(ir::sym_shape_to_string(one->node->outputs[0]->shape), "1x32x81x19");
  expect_tactics_match_reference(*one, 1e-4, 1e-4);
  ir::Attributes second = attrs_of({{"strides", Ints{2, 1}},
                                    {"pads", Ints{10, 5, 10, 5}},
                                    {"activation", std::string("clip")},
                                    {"activation_alpha", 0.0f},
                                    {"activation_beta", 20.0f}});
  auto two = make_node(OpKind::kFusedConv,
                       {runtime(random_tensor({1, 32, 81, 19}, 14)),
                        constant(random_tensor({32, 32, 21, 11}, 15, -0.1f, 0.1f)),
                        constant(random_tensor({32}, 16))},
                       second);
  ASSERT_EQ(ir::sym_shape_to_string(two->node->outputs[0]->shape), "1x32x41x19");
  expect_tactics_match_reference(*two, 2e-4, 2e-4);
}

bool lists_tactic(const ir::Node& node, const std::string& name) {
  for (const auto& t : backends::cpu::tactics_for(node))
    if (t.name == name) return true;
  return false;
}

TEST(Conv, DirectTacticOnlyWhereItApplies) {
  const bool avx2 = backends::cpu::cpu_has_avx2_fma();
  auto plain = make_node(OpKind::kConv, {runtime(random_tensor({1, 1, 9, 9}, 1)),
                                         constant(random_tensor({32, 1, 5, 5}, 2))});
  EXPECT_EQ(lists_tactic(*plain->node, "direct_avx2"), avx2);
  auto grouped =
      make_node(OpKind::kConv,
                {runtime(random_tensor({1, 4, 9, 9}, 3)), constant(random_tensor({4, 2, 3, 3}, 4))},
                attrs_of({{"group", std::int64_t{2}}}));
  EXPECT_FALSE(lists_tactic(*grouped->node, "direct_avx2"));
  auto one_d = make_node(OpKind::kConv, {runtime(random_tensor({1, 2, 20}, 5)),
                                         constant(random_tensor({4, 2, 5}, 6))});
  EXPECT_FALSE(lists_tactic(*one_d->node, "direct_avx2"));
  auto runtime_weights = make_node(OpKind::kConv, {runtime(random_tensor({1, 1, 9, 9}, 7)),
                                                   runtime(random_tensor({8, 1, 3, 3}, 8))});
  EXPECT_FALSE(lists_tactic(*runtime_weights->node, "direct_avx2"));
}

TEST(Conv, FewPositionsTacticOnlyWhereItApplies) {
  const bool avx2 = backends::cpu::cpu_has_avx2_fma();
  auto stft =
      make_node(OpKind::kConv,
                {runtime(random_tensor({1, 1, 600}, 1)), constant(random_tensor({10, 1, 256}, 2))},
                attrs_of({{"strides", Ints{128}}}));
  EXPECT_EQ(lists_tactic(*stft->node, "few_positions"), avx2);
  auto grouped =
      make_node(OpKind::kConv,
                {runtime(random_tensor({1, 4, 9, 9}, 3)), constant(random_tensor({4, 2, 3, 3}, 4))},
                attrs_of({{"group", std::int64_t{2}}}));
  EXPECT_FALSE(lists_tactic(*grouped->node, "few_positions"));
  auto runtime_weights = make_node(
      OpKind::kConv, {runtime(random_tensor({1, 1, 30}, 7)), runtime(random_tensor({8, 1, 3}, 8))});
  EXPECT_FALSE(lists_tactic(*runtime_weights->node, "few_positions"));
}

// The FFT tactic: large kernels with strides, asymmetric and larger-than-input padding, a batch
// of two (symbolic), several channels and a fused activation, each against the reference.
TEST(Conv, FftTacticMatchesReference) {
  struct FftCase {
    std::string label;
    Dims x, w;
    ir::Attributes attrs;
  };
  const std::vector<FftCase> cases = {
      {"ds2_conv0_short",
       {2, 1, 33, 20},
       {4, 1, 41, 11},
       attrs_of({{"strides", Ints{2, 2}}, {"pads", Ints{20, 5, 20, 5}}})},
      {"stride_2_1",
       {1, 3, 17, 9},
       {5, 3, 7, 5},
       attrs_of({{"strides", Ints{2, 1}}, {"pads", Ints{3, 2, 3, 2}}})},
      {"asymmetric_pads_stride3",
       {2, 2, 12, 13},
       {3, 2, 5, 5},
       attrs_of({{"strides", Ints{3, 2}}, {"pads", Ints{0, 4, 2, 1}}})},
      {"padding_larger_than_input",
       {1, 2, 3, 4},
       {2, 2, 9, 7},
       attrs_of({{"pads", Ints{6, 5, 6, 5}}})},
      {"valid_no_padding", {1, 4, 20, 30}, {6, 4, 5, 6}, {}},
      {"many_tiles_same_upper",
       {1, 3, 70, 90},
       {2, 3, 5, 7},
       attrs_of({{"auto_pad", std::string("SAME_UPPER")}, {"strides", Ints{1, 2}}})},
      {"stride_4", {1, 2, 30, 41}, {3, 2, 5, 5}, attrs_of({{"strides", Ints{4, 4}}})},
      {"clip_activation",
       {1, 2, 15, 15},
       {3, 2, 6, 6},
       attrs_of({{"pads", Ints{2, 2, 3, 3}},
                 {"activation", std::string("clip")},
                 {"activation_alpha", 0.0f},
                 {"activation_beta", 0.5f}})},
  };
  std::uint32_t seed = 500;
  for (const FftCase& c : cases) {
    SCOPED_TRACE(c.label);
    const bool fused = c.attrs.has("activation");
    auto one =
        make_node(fused ? OpKind::kFusedConv : OpKind::kConv,
                  {runtime(random_tensor(c.x, seed++), true), constant(random_tensor(c.w, seed++)),
                   constant(random_tensor({c.w[0]}, seed++))},
                  c.attrs);
    ASSERT_TRUE(lists_tactic(*one->node, "fft"));
    Expected<Tensor> reference = run_tactic(*one, backends::kReferenceTactic, 1);
    ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
    ASSERT_TRUE(lists_tactic(*one->node, "fft_large_tiles"));
    for (backends::TacticId tactic :
         {backends::cpu::dense::kTacticFftConv, backends::cpu::dense::kTacticFftConvLargeTiles}) {
      for (int threads : {1, 2}) {
        Expected<Tensor> got = run_tactic(*one, tactic, threads);
        ASSERT_TRUE(got.has_value()) << got.status().to_string();
        EXPECT_TRUE(all_close(*reference, *got, 1e-5, 1e-4))
            << "tactic " << tactic << ", " << threads << " threads";
      }
    }
  }
}

// Not offered for small kernels, groups, dilations, runtime weights or spatial dims that are
// not static; a kernel run at other spatial dims than planned refuses them.
TEST(Conv, FftTacticOnlyWhereItApplies) {
  auto small = make_node(OpKind::kConv, {runtime(random_tensor({1, 2, 9, 9}, 1)),
                                         constant(random_tensor({2, 2, 3, 3}, 2))});
  EXPECT_FALSE(lists_tactic(*small->node, "fft"));
  auto grouped = make_node(
      OpKind::kConv,
      {runtime(random_tensor({1, 4, 12, 12}, 3)), constant(random_tensor({4, 2, 5, 5}, 4))},
      attrs_of({{"group", std::int64_t{2}}}));
  EXPECT_FALSE(lists_tactic(*grouped->node, "fft"));
  auto dilated = make_node(
      OpKind::kConv,
      {runtime(random_tensor({1, 2, 20, 20}, 5)), constant(random_tensor({2, 2, 5, 5}, 6))},
      attrs_of({{"dilations", Ints{2, 2}}}));
  EXPECT_FALSE(lists_tactic(*dilated->node, "fft"));
  auto runtime_weights = make_node(OpKind::kConv, {runtime(random_tensor({1, 2, 12, 12}, 7)),
                                                   runtime(random_tensor({2, 2, 5, 5}, 8))});
  EXPECT_FALSE(lists_tactic(*runtime_weights->node, "fft"));
  // The tile transforms depend on the kernel only, so a width that is symbolic at build time is
  // fine: one kernel runs at several widths (one tile and several) and matches the reference.
  ir::Graph g;
  ir::Value* xv = g.add_value(
      "x", DType::kF32,
      {ir::Dim::known(1), ir::Dim::known(2), ir::Dim::known(12), ir::Dim::symbolic("T")});
  g.inputs.push_back(xv);
  ir::Value* yv = g.add_value("y", DType::kF32, {}, false);
  const Tensor w = random_tensor({3, 2, 5, 5}, 9);
  ir::Node* n = g.add_node(OpKind::kConv, "conv", {xv, g.add_constant("w", w)}, {yv});
  n->attrs = attrs_of({{"pads", Ints{2, 1, 0, 3}}});
  g.outputs.push_back(yv);
  ASSERT_TRUE(ir::infer_graph(g).is_ok());
  ASSERT_TRUE(lists_tactic(*n, "fft"));
  ASSERT_TRUE(lists_tactic(*n, "fft_large_tiles"));
  auto fft = backends::cpu::create_kernel(*n, backends::cpu::dense::kTacticFftConvLargeTiles);
  auto reference = backends::cpu::create_kernel(*n, backends::kReferenceTactic);
  ASSERT_TRUE(fft.has_value()) << fft.status().to_string();
  ASSERT_TRUE(reference.has_value());
  for (std::int64_t width : {6, 13, 57}) {
    SCOPED_TRACE(width);
    const Tensor x = random_tensor({1, 2, 12, width}, 10 + static_cast<std::uint32_t>(width));
    // Height 12 + 2 - 5 + 1 = 10; width + 1 + 3 - 5 + 1.
    Tensor want = Tensor::uninitialized(DType::kF32, {1, 3, 10, width});
    Tensor got = Tensor::uninitialized(DType::kF32, {1, 3, 10, width});
    const Tensor* ins[] = {&x, &w};
    ThreadPool pool(2);
    backends::KernelContext context{&pool};
    Tensor* want_out[] = {&want};
    Tensor* got_out[] = {&got};
    ASSERT_TRUE((*reference)->run(ins, want_out, context).is_ok());
    ASSERT_TRUE((*fft)->run(ins, got_out, context).is_ok());
    EXPECT_TRUE(all_close(want, got, 1e-5, 1e-4));
  }
}

TEST(Conv, OutputChannelPartsOnManyThreads) {
  // The oneDNN tactics split batch-1 convolutions into output-channel parts, one per pool
  // thread (boundaries on multiples of 8, the last part shorter): odd channel counts and more
  // threads than parts, with bias and a fused activation. Big enough to be split (>= 20 MFLOP).
  std::uint32_t seed = 300;
  for (std::int64_t out_channels : {24, 37, 61}) {
    SCOPED_TRACE(out_channels);
    auto one = make_node(OpKind::kFusedConv,
                         {runtime(random_tensor({1, 24, 60, 64}, seed++)),
                          constant(random_tensor({out_channels, 24, 3, 4}, seed++, -0.2f, 0.2f)),
                          constant(random_tensor({out_channels}, seed++))},
                         attrs_of({{"pads", Ints{1, 2, 1, 1}},
                                   {"strides", Ints{2, 1}},
                                   {"activation", std::string("relu")}}));
    Expected<Tensor> reference = run_tactic(*one, backends::kReferenceTactic, 1);
    ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
    for (const auto& tactic : backends::cpu::tactics_for(*one->node)) {
      for (int threads : {3, 4, 9}) {
        Expected<Tensor> got = run_tactic(*one, tactic.id, threads);
        ASSERT_TRUE(got.has_value()) << tactic.name << ": " << got.status().to_string();
        EXPECT_TRUE(all_close(*reference, *got, 1e-4, 1e-4))
            << "tactic " << tactic.name << ", " << threads << " threads";
      }
    }
  }
}

TEST(Conv, FusedActivationsMatchReference) {
  const std::vector<ir::Attributes> activations{
      attrs_of({{"activation", std::string("relu")}}),
      attrs_of({{"activation", std::string("leaky_relu")}, {"activation_alpha", 0.2f}}),
      attrs_of({{"activation", std::string("clip")},
                {"activation_alpha", -0.3f},
                {"activation_beta", 0.4f}}),
      attrs_of({{"activation", std::string("sigmoid")}}),
      attrs_of({{"activation", std::string("tanh")}}),
      attrs_of({{"activation", std::string("gelu_erf")}}),
      // A clamp after the activation (openWakeWord's LeakyRelu then Max(x, -0.4)).
      attrs_of({{"activation", std::string("leaky_relu")},
                {"activation_alpha", 0.2f},
                {"activation_clamp_min", -0.1f},
                {"activation_clamp_max", 0.7f}}),
  };
  std::uint32_t seed = 100;
  for (ir::Attributes attrs : activations) {
    SCOPED_TRACE(attrs.get_string("activation", ""));
    attrs.set("pads", Ints{1, 0, 1, 2});
    for (std::int64_t group : {3, 1}) {
      // Group 1 reaches the tactics that take only ungrouped convolutions (few_positions, fft).
      attrs.set("group", group);
      auto one = make_node(OpKind::kFusedConv,
                           {runtime(random_tensor({2, 6, 5, 8}, seed++)),
                            constant(random_tensor({9, 6 / group, 3, 3}, seed++)),
                            constant(random_tensor({9}, seed++))},
                           attrs);
      expect_tactics_match_reference(*one);
    }
  }
}

TEST(Conv, DepthwiseWithBiasAndSilu) {
  // Conformer's convolution module after BatchNorm folding: depthwise conv, bias, SiLU.
  auto one = make_node(OpKind::kFusedConv,
                       {runtime(random_tensor({1, 24, 40}, 7)),
                        constant(random_tensor({24, 1, 9}, 8)), constant(random_tensor({24}, 9))},
                       attrs_of({{"group", std::int64_t{24}},
                                 {"pads", Ints{4, 4}},
                                 {"activation", std::string("silu")}}));
  EXPECT_TRUE(lists_tactic(*one->node, "depthwise_avx512") || !backends::cpu::cpu_has_avx512f());
  expect_tactics_match_reference(*one);
}

TEST(Conv, RuntimeBiasAndWeights) {
  // Non-constant bias works on every tactic; non-constant weights only offer reference + im2col.
  auto one = make_node(OpKind::kConv,
                       {runtime(random_tensor({1, 4, 6, 5}, 1)),
                        constant(random_tensor({3, 4, 2, 2}, 2)), runtime(random_tensor({3}, 3))});
  expect_tactics_match_reference(*one);
  auto two = make_node(OpKind::kConv, {runtime(random_tensor({1, 4, 6, 5}, 1)),
                                       runtime(random_tensor({3, 4, 2, 2}, 2))});
  const auto tactics = backends::cpu::tactics_for(*two->node);
  ASSERT_EQ(tactics.size(), 2u);
  EXPECT_TRUE(all_close(*run_tactic(*two, 0, 1), *run_tactic(*two, tactics[1].id, 2)));
}

TEST(Conv, ReferenceMatchesHandValues) {
  // y[i] = x[i-1] - x[i+1] + 0.5 with zero padding.
  auto one = make_node(OpKind::kConv,
                       {runtime(Tensor::from_vector<float>({1, 1, 5}, {1, 2, 3, 4, 5})),
                        constant(Tensor::from_vector<float>({1, 1, 3}, {1, 0, -1})),
                        constant(Tensor::from_vector<float>({1}, {0.5f}))},
                       attrs_of({{"pads", Ints{1, 1}}}));
  Expected<Tensor> y = run_tactic(*one, 0, 1);
  ASSERT_TRUE(y.has_value());
  EXPECT_TRUE(all_close(Tensor::from_vector<float>({1, 1, 5}, {-1.5f, -1.5f, -1.5f, -1.5f, 4.5f}),
                        *y, 1e-6, 0));
}

Tensor sequence(const Dims& dims, double scale, double step, double phase, bool cosine) {
  Tensor t = Tensor::uninitialized(DType::kF32, dims);
  for (std::int64_t i = 0; i < t.element_count(); ++i) {
    const double arg = step * static_cast<double>(i) + phase;
    t.data<float>()[i] = static_cast<float>(scale * (cosine ? std::cos(arg) : std::sin(arg)));
  }
  return t;
}

TEST(Conv, ReferenceMatchesPyTorch) {
  // torch.nn.functional.conv2d(x, w, b, stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2)
  // with x[i] = sin(0.37 i + 0.1), w[i] = 0.5 cos(0.11 i), b[i] = 0.1 i - 0.2 (float64 in torch).
  Tensor b = Tensor::uninitialized(DType::kF32, {6});
  for (int i = 0; i < 6; ++i) b.data<float>()[i] = 0.1f * static_cast<float>(i) - 0.2f;
  auto one = make_node(OpKind::kConv,
                       {runtime(sequence({2, 4, 7, 8}, 1.0, 0.37, 0.1, false)),
                        constant(sequence({6, 2, 3, 2}, 0.5, 0.11, 0.0, true)), constant(b)},
                       attrs_of({{"strides", Ints{2, 1}},
                                 {"pads", Ints{1, 1, 1, 1}},
                                 {"dilations", Ints{1, 2}},
                                 {"group", std::int64_t{2}}}));
  Expected<Tensor> y = run_tactic(*one, 0, 1);
  ASSERT_TRUE(y.has_value());
  ASSERT_EQ(y->dims(), (Dims{2, 6, 4, 8}));
  double sum = 0, sum_squares = 0;
  for (float v : y->span<float>()) {
    sum += v;
    sum_squares += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(sum, 15.890322771410215, 1e-4);
  EXPECT_NEAR(sum_squares, 67.94868391553567, 1e-4);
  const std::pair<int, double> samples[] = {{0, -0.05685254115154703},
                                            {17, -0.5109964928775605},
                                            {100, 0.12670343298368134},
                                            {201, -0.9359326354463227},
                                            {383, 0.13739798987008978}};
  for (auto [index, value] : samples) EXPECT_NEAR(y->data<float>()[index], value, 1e-5) << index;
}

TEST(Conv, ConcurrentCallsGiveIdenticalResults) {
  auto one =
      make_node(OpKind::kFusedConv,
                {runtime(random_tensor({1, 8, 20, 17}, 5), true),
                 constant(random_tensor({16, 8, 3, 3}, 6)), constant(random_tensor({16}, 7))},
                attrs_of({{"pads", Ints{1, 1, 1, 1}}, {"activation", std::string("relu")}}));
  expect_concurrent_calls_identical(*one);
}

TEST(Conv, NoTacticsForOtherDtypes) {
  ir::Graph graph;
  ir::Value* x = graph.add_value("x", DType::kF16, ir::sym_shape_from_dims({1, 2, 4, 4}));
  ir::Value* w = graph.add_value("w", DType::kF16, ir::sym_shape_from_dims({2, 2, 3, 3}));
  ir::Value* y = graph.add_value("y", DType::kF16, {});
  ir::Node* node = graph.add_node(OpKind::kConv, "conv", {x, w}, {y});
  EXPECT_TRUE(backends::cpu::tactics_for(*node).empty());
}

}  // namespace
}  // namespace voxrt::dense_test
