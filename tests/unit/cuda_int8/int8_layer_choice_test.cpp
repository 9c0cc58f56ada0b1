// Which layers the CUDA backend runs in INT8, and the builder's INT8 step choosing them for the
// CUDA target (calibrated on the CPU, the others at fp16), without a GPU.
#include <gtest/gtest.h>

#include <random>

#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/int8_gemm_host.h"
#include "backends/layer_precision.h"
#include "builder/calibration/int8_calibration.h"
#include "builder/layer_precision.h"
#include "core/thread_pool.h"
#include "ir/shape_inference.h"
#include "runtime/engine_format.h"
#include "runtime/plan.h"
#include "voxrt/calibration.h"

namespace voxrt {
namespace {

namespace cuda = backends::cuda;
namespace quantized = backends::cpu::quantized;
using ir::Dim;

Tensor random_tensor(Dims dims, std::uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (float& v : t.span<float>()) v = normal(rng);
  return t;
}

ir::Node* add(ir::Graph& g, ir::OpKind op, const std::string& name, std::vector<ir::Value*> in,
              std::vector<ir::Value*> out) {
  ir::Node* n = g.add_node(op, name, std::move(in), std::move(out));
  n->opset = 17;
  return n;
}

TEST(CudaInt8Layers, GemmsWithConstantWeightsTakeInt8OthersDoNot) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", DType::kF32, {Dim::known(4), Dim::known(8)});
  ir::Value* x_t = g.add_value("x_t", DType::kF32, {Dim::known(8), Dim::known(4)});
  ir::Value* w = g.add_constant("w", random_tensor({8, 3}, 1, 0.5f));
  ir::Value* w_t = g.add_constant("w_t", random_tensor({3, 8}, 2, 0.5f));
  ir::Value* w3 = g.add_constant("w3", random_tensor({2, 8, 3}, 3, 0.5f));
  ir::Value* bias = g.add_constant("bias", random_tensor({3}, 4, 0.5f));
  ir::Value* bad_bias = g.add_constant("bad_bias", random_tensor({4, 3}, 5, 0.5f));
  ir::Value* conv_w = g.add_constant("conv_w", random_tensor({3, 8, 1}, 6, 0.5f));
  ir::Value* x3 = g.add_value("x3", DType::kF32, {Dim::known(1), Dim::known(8), Dim::known(5)});
  std::vector<ir::Value*> outs;
  for (int i = 0; i < 8; ++i) outs.push_back(g.add_value(str_cat("y", i), DType::kF32, {}, false));
  ir::Node* matmul = add(g, ir::OpKind::kMatMul, "matmul", {x, w}, {outs[0]});
  ir::Node* fused = add(g, ir::OpKind::kFusedMatMul, "fused", {x, w, bias}, {outs[1]});
  fused->attrs.set("activation", std::string("relu"));
  ir::Node* gemm_t = add(g, ir::OpKind::kGemm, "gemm_t", {x, w_t, bias}, {outs[2]});
  gemm_t->attrs.set("transB", std::int64_t{1});
  ir::Node* gemm_ta = add(g, ir::OpKind::kGemm, "gemm_ta", {x_t, w}, {outs[3]});
  gemm_ta->attrs.set("transA", std::int64_t{1});
  ir::Node* activations = add(g, ir::OpKind::kMatMul, "two_activations", {x, x_t}, {outs[4]});
  ir::Node* batched = add(g, ir::OpKind::kMatMul, "batched_weight", {x, w3}, {outs[5]});
  ir::Node* full_c = add(g, ir::OpKind::kGemm, "full_c", {x, w, bad_bias}, {outs[6]});
  ir::Node* conv = add(g, ir::OpKind::kConv, "pointwise_conv", {x3, conv_w}, {outs[7]});
  EXPECT_TRUE(cuda::cuda_int8_applies(*matmul));
  EXPECT_TRUE(cuda::cuda_int8_applies(*fused));
  EXPECT_TRUE(cuda::cuda_int8_applies(*gemm_t));
  EXPECT_FALSE(cuda::cuda_int8_applies(*gemm_ta));      // A transposed
  EXPECT_FALSE(cuda::cuda_int8_applies(*activations));  // no constant weight
  EXPECT_FALSE(cuda::cuda_int8_applies(*batched));      // 3-D weight
  EXPECT_FALSE(cuda::cuda_int8_applies(*full_c));       // C is not one value per column
  EXPECT_TRUE(cuda::cuda_int8_applies(*conv));          // a pointwise 1-D convolution

  // Without the builder's marks there is nothing to quantize the input with.
  const auto unmarked = cuda::make_int8_gemm_layer(*gemm_t);
  ASSERT_FALSE(unmarked.has_value());
  EXPECT_NE(unmarked.status().message().find("voxrt.int8.input_scale"), std::string::npos)
      << unmarked.status().message();

  // Gemm with transB, alpha and beta: the weight rows as stored, alpha in the scales, beta in
  // the bias. MatMul's [K, N] weight is transposed into rows.
  const auto input = quantized::ActivationQuantization::asymmetric(-1.0, 3.0);
  for (ir::Node* n : {gemm_t, matmul}) {
    n->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
    n->attrs.set(quantized::kInputScaleAttr, input.scale);
    n->attrs.set(quantized::kInputZeroPointAttr, static_cast<std::int64_t>(input.zero_point));
  }
  gemm_t->attrs.set("alpha", 0.5f);
  gemm_t->attrs.set("beta", 2.0f);
  const auto layer = cuda::make_int8_gemm_layer(*gemm_t);
  ASSERT_TRUE(layer.has_value()) << layer.status().message();
  std::vector<float> doubled(3);
  for (int c = 0; c < 3; ++c) doubled[c] = 2.0f * bias->constant->data<float>()[c];
  const cuda::Int8GemmLayer want =
      cuda::make_int8_gemm_layer(w_t->constant->data<float>(), 3, 8, input, 0.5f, doubled.data());
  EXPECT_EQ(layer->weights, want.weights);
  EXPECT_EQ(layer->scales, want.scales);
  EXPECT_EQ(layer->bias, want.bias);
  EXPECT_EQ(layer->zero_point_sums, want.zero_point_sums);

  const auto from_matmul = cuda::make_int8_gemm_layer(*matmul);
  ASSERT_TRUE(from_matmul.has_value()) << from_matmul.status().message();
  // Column c of the [8, 3] weight is row c of the w_t layout.
  std::vector<float> rows(24);
  for (int k = 0; k < 8; ++k) {
    for (int c = 0; c < 3; ++c) rows[c * 8 + k] = w->constant->data<float>()[k * 3 + c];
  }
  const cuda::Int8GemmLayer want_matmul =
      cuda::make_int8_gemm_layer(rows.data(), 3, 8, input, 1.0f, nullptr);
  EXPECT_EQ(from_matmul->weights, want_matmul.weights);
  EXPECT_TRUE(from_matmul->bias.empty());
}

// The CUDA path's convolution references (the unfolding with quantized padding, the int32 sums,
// the epilogue, NCHW) against the CPU backend's INT8 convolution on the same marks: 2-D with
// strides, pads and dilations, and a 1-D pointwise one.
TEST(CudaInt8Layers, ConvolutionReferencesGiveTheCpuInt8Convolution) {
  struct Case {
    Dims x, w;
    std::vector<std::int64_t> strides, pads, dilations;
  };
  const Case cases[] = {
      {{2, 3, 9, 14}, {5, 3, 3, 5}, {2, 2}, {1, 2, 0, 2}, {1, 1}},   // DS2-like: no pad in time
      {{1, 1, 7, 20}, {4, 1, 5, 11}, {2, 2}, {0, 5, 0, 5}, {1, 1}},  // the default model's conv1
      {{2, 4, 6, 6}, {3, 4, 3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}},    // dilated, wide pads
      {{3, 6, 11}, {5, 6, 1}, {1}, {0, 0}, {1}},                     // 1-D pointwise
  };
  for (const Case& k : cases) {
    for (const bool relu : {false, true}) {
      SCOPED_TRACE(testing::Message()
                   << dims_to_string(k.x) << " * " << dims_to_string(k.w) << (relu ? " relu" : ""));
      ir::Graph g;
      Tensor x = random_tensor(k.x, 31, 1.0f);
      x.data<float>()[0] = 9.0f;  // clamped
      ir::Value* xv = g.add_value("x", DType::kF32, ir::sym_shape_from_dims(k.x));
      ir::Value* w = g.add_constant("w", random_tensor(k.w, 32, 0.3f));
      ir::Value* b = g.add_constant("b", random_tensor({k.w[0]}, 33, 0.2f));
      ir::Value* y = g.add_value("y", DType::kF32, {}, false);
      ir::Node* conv = add(g, ir::OpKind::kFusedConv, "conv", {xv, w, b}, {y});
      conv->attrs.set("strides", k.strides);
      conv->attrs.set("pads", k.pads);
      conv->attrs.set("dilations", k.dilations);
      conv->attrs.set("activation", std::string(relu ? "relu" : "none"));
      const auto input = quantized::ActivationQuantization::asymmetric(-1.5, 2.0);
      conv->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
      conv->attrs.set(quantized::kInputScaleAttr, input.scale);
      conv->attrs.set(quantized::kInputZeroPointAttr, static_cast<std::int64_t>(input.zero_point));
      g.inputs = {xv};
      g.outputs = {y};
      ASSERT_TRUE(ir::infer_graph(g).is_ok());
      ASSERT_TRUE(cuda::cuda_int8_applies(*conv));

      auto plan = runtime::Plan::compile(g, runtime::TacticPolicy::kReference);
      ASSERT_TRUE(plan) << plan.status().message();
      ThreadPool pool(1);
      backends::KernelContext context{&pool};
      std::vector<Tensor> outputs;
      const std::vector<Tensor> inputs{x};
      ASSERT_TRUE((*plan)->execute(inputs, outputs, context).is_ok());
      const Tensor& want = outputs[0];

      const auto layer = cuda::make_int8_gemm_layer(*conv);
      ASSERT_TRUE(layer) << layer.status().message();
      const auto geometry = cuda::int8_conv_geometry(*conv, k.x, want.dims());
      ASSERT_TRUE(geometry) << geometry.status().message();
      const std::vector<std::int8_t> a = cuda::im2col_signed(x.data<float>(), *geometry, *layer);
      const std::vector<std::int32_t> acc =
          cuda::int8_gemm_int32_reference(a.data(), geometry->rows(), *layer);
      const std::int64_t positions = geometry->out_h * geometry->out_w;
      ASSERT_EQ(want.element_count(), geometry->rows() * layer->columns);
      double worst = 0;
      for (std::int64_t i = 0; i < want.element_count(); ++i) {
        const std::int64_t p = i % positions, c = i / positions % layer->columns,
                           m = i / (positions * layer->columns) * positions + p;
        float got = cuda::int8_dequantize(
            acc[static_cast<std::size_t>(m * layer->padded_columns + c)], *layer, c);
        if (relu) got = std::max(got, 0.0f);
        worst = std::max(worst, static_cast<double>(std::fabs(got - want.data<float>()[i])));
      }
      EXPECT_LE(worst, 1e-5);
    }
  }
}

// After autotuning with the fp16 fallback: a marked layer whose chosen tactic is an fp16 one is
// recorded fp16 and loses its int8 marks; one that runs an IMMA tactic keeps them.
TEST(CudaInt8Layers, LayersWhoseFp16TacticWonAreRecordedFp16) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", DType::kF32, {Dim::known(4), Dim::known(8)});
  ir::Value* w = g.add_constant("w", random_tensor({8, 3}, 1, 0.5f));
  ir::Value* y1 = g.add_value("y1", DType::kF32, {}, false);
  ir::Value* y2 = g.add_value("y2", DType::kF32, {}, false);
  ir::Node* kept = add(g, ir::OpKind::kMatMul, "kept", {x, w}, {y1});
  ir::Node* fell_back = add(g, ir::OpKind::kMatMul, "fell_back", {x, w}, {y2});
  for (ir::Node* n : {kept, fell_back}) {
    n->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
    n->attrs.set(quantized::kInputScaleAttr, 0.05f);
    n->attrs.set(quantized::kInputZeroPointAttr, std::int64_t{128});
  }
  kept->attrs.set(runtime::kTacticNameAttr, std::string("imma_0_int8"));
  fell_back->attrs.set(runtime::kTacticNameAttr, std::string("cublaslt_0"));
  std::vector<std::string> notes;
  builder::record_tuned_device_int8_precisions(g, notes);
  EXPECT_EQ(backends::layer_precision(*kept, Precision::kInt8), Precision::kInt8);
  EXPECT_TRUE(quantized::marked_int8(*kept));
  EXPECT_EQ(backends::layer_precision(*fell_back, Precision::kInt8), Precision::kFp16);
  EXPECT_FALSE(quantized::marked_int8(*fell_back));
  EXPECT_FALSE(fell_back->attrs.has(quantized::kInputScaleAttr));
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("'fell_back' runs in fp16"), std::string::npos) << notes[0];
}

// The tactics an int8 layer lists: the reference first (the autotuner times it last and a build
// without autotuning passes over it), then the IMMA ones (what a build without autotuning takes),
// then its fp16 ones; an unmarked layer of an int8 engine lists its fp16 tactics.
TEST(CudaInt8Layers, Int8LayersListTheImmaTacticsAfterTheReferenceThenTheFp16Ones) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", DType::kF32, {Dim::known(4), Dim::known(8)});
  ir::Value* w = g.add_constant("w", random_tensor({8, 6}, 1, 0.5f));
  ir::Value* y1 = g.add_value("y1", DType::kF32, {}, false);
  ir::Value* y2 = g.add_value("y2", DType::kF32, {}, false);
  ir::Node* marked = add(g, ir::OpKind::kMatMul, "marked", {x, w}, {y1});
  ir::Node* plain = add(g, ir::OpKind::kMatMul, "plain", {x, w}, {y2});
  marked->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
  marked->attrs.set(quantized::kInputScaleAttr, 0.05f);
  marked->attrs.set(quantized::kInputZeroPointAttr, std::int64_t{128});
  ASSERT_TRUE(ir::infer_graph(g).is_ok());
  ASSERT_TRUE(cuda::runs_int8(*marked));
  ASSERT_FALSE(cuda::runs_int8(*plain));
  const auto fp16 = cuda::tactics_for(*plain, Precision::kFp16);
  EXPECT_EQ(cuda::tactics_for(*plain, Precision::kInt8).size(), fp16.size());
  const auto int8 = cuda::tactics_for(*marked, Precision::kInt8);
  ASSERT_EQ(int8.size(), fp16.size() + cuda::kInt8GemmCandidates);
  EXPECT_EQ(int8[0].id, fp16[0].id);
  for (int i = 0; i < cuda::kInt8GemmCandidates; ++i) {
    EXPECT_TRUE(cuda::is_int8_gemm_tactic(int8[1 + i].id));
    EXPECT_TRUE(int8[1 + i].name.ends_with("_int8")) << int8[1 + i].name;
  }
  for (std::size_t i = 1; i < fp16.size(); ++i) {
    EXPECT_EQ(int8[i + cuda::kInt8GemmCandidates].id, fp16[i].id);
    EXPECT_FALSE(cuda::is_int8_gemm_tactic(fp16[i].id));
  }
  EXPECT_EQ(cuda::unsupported_reason(*marked, Precision::kInt8), "");
}

constexpr std::int64_t kBins = 16, kHidden = 8, kProjected = 12, kClasses = 5, kChunk = 4;

class RandomStreams final : public CalibrationSource {
 public:
  Status prepare(const CalibrationModelInfo&) override { return Status::ok(); }
  std::string describe() const override { return "random streams"; }
  std::string fingerprint() const override { return "random"; }
  int stream_count() const override { return 3; }
  Expected<std::vector<CalibrationChunk>> stream(int index) override {
    std::vector<CalibrationChunk> chunks(2);
    for (std::size_t c = 0; c < chunks.size(); ++c) {
      chunks[c]["features"] =
          random_tensor({1, kChunk, kBins},
                        static_cast<std::uint32_t>(100 + index * 10 + static_cast<int>(c)), 1.0f);
    }
    return chunks;
  }
};

// features -> MatMul -> Relu -> MatMul (hidden) -> GRU (state) -> MatMul (final projection).
TEST(CudaInt8Layers, BuilderStepMarksTheCudaGemmsInt8AndTheRestFp16) {
  ir::Graph g;
  ir::Value* features =
      g.add_value("features", DType::kF32, {Dim::known(1), Dim::known(kChunk), Dim::known(kBins)});
  ir::Value* h_in =
      g.add_value("h_in", DType::kF32, {Dim::known(1), Dim::known(1), Dim::known(kHidden)});
  ir::Value* w1 = g.add_constant("w1", random_tensor({kBins, kProjected}, 1, 0.3f));
  ir::Value* w2 = g.add_constant("w2", random_tensor({kProjected, kProjected}, 2, 0.3f));
  ir::Value* gw = g.add_constant("gru_w", random_tensor({1, 3 * kHidden, kProjected}, 3, 0.3f));
  ir::Value* gr = g.add_constant("gru_r", random_tensor({1, 3 * kHidden, kHidden}, 4, 0.3f));
  ir::Value* gb = g.add_constant("gru_b", random_tensor({1, 6 * kHidden}, 5, 0.1f));
  ir::Value* w3 = g.add_constant("w3", random_tensor({kHidden, kClasses}, 6, 0.4f));
  auto value = [&](const char* name) { return g.add_value(name, DType::kF32, {}, false); };
  ir::Value *p1 = value("p1"), *r1 = value("r1"), *p2 = value("p2"), *tm = value("tm"),
            *y = value("gru_y"), *h_out = value("h_out"), *logits = value("logits");
  add(g, ir::OpKind::kMatMul, "dense_in", {features, w1}, {p1});
  add(g, ir::OpKind::kRelu, "relu", {p1}, {r1});
  add(g, ir::OpKind::kMatMul, "dense_hidden", {r1, w2}, {p2});
  add(g, ir::OpKind::kTranspose, "to_time_major", {p2}, {tm})
      ->attrs.set("perm", std::vector<std::int64_t>{1, 0, 2});
  ir::Node* gru = add(g, ir::OpKind::kGRU, "gru", {tm, gw, gr, gb, nullptr, h_in}, {y, h_out});
  gru->attrs.set("hidden_size", kHidden);
  gru->attrs.set("linear_before_reset", std::int64_t{1});
  add(g, ir::OpKind::kMatMul, "classifier", {y, w3}, {logits});
  g.inputs = {features, h_in};
  g.outputs = {logits, h_out};
  g.metadata["voxrt.chunk_frames"] = std::to_string(kChunk);
  ASSERT_TRUE(ir::infer_graph(g).is_ok());

  BuilderConfig config;
  config.device = DeviceKind::kCuda;
  config.precision = Precision::kInt8;
  config.states = {{"h_in", "h_out"}};
  config.int8.data = std::make_shared<RandomStreams>();
  config.int8.sensitivity_streams = 1;
  builder::calibration::Int8Target target;
  target.backend = "CUDA";
  target.has_int8_kernel = [](const ir::Node& n) { return cuda::cuda_int8_applies(n); };
  target.fallback = Precision::kFp16;
  BuildReport report;
  const Status s = builder::calibration::calibrate_int8_layers(g, 7, config, report, target);
  ASSERT_TRUE(s.is_ok()) << s.message();
  builder::settle_device_int8_layer_precisions(g, config.precision, report.notes);

  const auto precision_of = [&](const std::string& name) {
    for (const ir::Node* n : g.nodes()) {
      if (n->name == name) return backends::layer_precision(*n, Precision::kInt8);
    }
    ADD_FAILURE() << "no node " << name;
    return Precision::kFp32;
  };
  EXPECT_EQ(precision_of("dense_in"), Precision::kInt8);
  EXPECT_EQ(precision_of("dense_hidden"), Precision::kInt8);
  EXPECT_EQ(precision_of("gru"), Precision::kFp16);         // no CUDA INT8 kernel
  EXPECT_EQ(precision_of("classifier"), Precision::kFp16);  // the final projection
  EXPECT_EQ(precision_of("relu"), Precision::kFp16);
  for (const ir::Node* n : g.nodes()) {
    if (n->name == "dense_in" || n->name == "dense_hidden") {
      EXPECT_TRUE(quantized::marked_int8(*n)) << n->name;
    }
  }
  // The CUDA candidates only: the GRU is no candidate there.
  ASSERT_EQ(report.int8_layers.size(), 3u);
  for (const auto& layer : report.int8_layers) {
    EXPECT_NE(layer.node, "gru");
    if (layer.node == "classifier") {
      EXPECT_EQ(layer.reason, "final projection (fp16 by default)");
    }
  }
}

}  // namespace
}  // namespace voxrt
