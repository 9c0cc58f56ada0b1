// The sensitivity pass's batched runs (builder/calibration/batched_stream_run.h) against the
// batch-1 runs they replaced: on a small streaming model with states on two different batch
// axes, streams of different lengths and shorter last chunks, every stream's outputs at every
// chunk must be the batch-1 ones to the bit, in FP32 and with each weight layer alone in INT8
// (what the per-layer output errors are computed from), and the runs must really be batched.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/layer_precision.h"
#include "builder/build_graph.h"
#include "builder/calibration/batched_stream_run.h"
#include "builder/calibration/calibration_run.h"
#include "ir/shape_inference.h"
#include "runtime/plan.h"

namespace voxrt::builder::calibration {
namespace {

constexpr std::int64_t kBins = 40, kProjected = 24, kHidden = 16, kClasses = 7, kChunk = 8;
constexpr std::int64_t kContext = 3;  // frames the convolution-like state carries

Tensor random_tensor(Dims dims, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// features [batch, frames, bins] -> MatMul + ReLU; its last frames carried to the next chunk
// (context [batch, 3, 24], batch on axis 0) and added to the next chunk's first frames' mean;
// -> GRU (h [1, batch, 16], batch on axis 1) -> MatMul -> logits [frames, 1, batch, 7].
std::unique_ptr<ir::Graph> make_model() {
  auto g = std::make_unique<ir::Graph>();
  using ir::Dim;
  const Dim batch = Dim::symbolic("batch"), frames = Dim::symbolic("frames");
  ir::Value* features = g->add_value("features", DType::kF32, {batch, frames, Dim::known(kBins)});
  ir::Value* context_in = g->add_value("context_in", DType::kF32,
                                       {batch, Dim::known(kContext), Dim::known(kProjected)});
  ir::Value* h_in = g->add_value("h_in", DType::kF32, {Dim::known(1), batch, Dim::known(kHidden)});
  ir::Value* w1 = g->add_constant("w1", random_tensor({kBins, kProjected}, 1, 0.2f));
  ir::Value* w = g->add_constant("gru_w", random_tensor({1, 3 * kHidden, kProjected}, 2, 0.25f));
  ir::Value* r = g->add_constant("gru_r", random_tensor({1, 3 * kHidden, kHidden}, 3, 0.25f));
  ir::Value* b = g->add_constant("gru_b", random_tensor({1, 6 * kHidden}, 4, 0.1f));
  ir::Value* w2 = g->add_constant("w2", random_tensor({kHidden, kClasses}, 5, 0.4f));
  ir::Value* axes = g->add_constant("mean_axes", Tensor::from_vector<std::int64_t>({1}, {1}));
  ir::Value* starts =
      g->add_constant("starts", Tensor::from_vector<std::int64_t>({1}, {-kContext}));
  ir::Value* ends = g->add_constant("ends", Tensor::from_vector<std::int64_t>({1}, {1 << 30}));
  const auto value = [&](const char* name) { return g->add_value(name, DType::kF32, {}, false); };
  ir::Value* projected = value("projected");
  ir::Value* relu = value("relu");
  ir::Value* context_mean = value("context_mean");
  ir::Value* mixed = value("mixed");
  ir::Value* joined = value("joined");
  ir::Value* context_out = value("context_out");
  ir::Value* time_major = value("time_major");
  ir::Value* y = value("gru_y");
  ir::Value* h_out = value("h_out");
  ir::Value* logits = value("logits");
  g->add_node(ir::OpKind::kMatMul, "dense_in", {features, w1}, {projected});
  g->add_node(ir::OpKind::kRelu, "relu", {projected}, {relu});
  ir::Node* mean =
      g->add_node(ir::OpKind::kReduceMean, "context_mean", {context_in, axes}, {context_mean});
  mean->attrs.set("keepdims", std::int64_t{1});
  g->add_node(ir::OpKind::kAdd, "mix", {relu, context_mean}, {mixed});
  ir::Node* concat = g->add_node(ir::OpKind::kConcat, "join", {context_in, mixed}, {joined});
  concat->attrs.set("axis", std::int64_t{1});
  g->add_node(ir::OpKind::kSlice, "keep_context", {joined, starts, ends, axes}, {context_out});
  ir::Node* transpose = g->add_node(ir::OpKind::kTranspose, "to_time_major", {mixed}, {time_major});
  transpose->attrs.set("perm", std::vector<std::int64_t>{1, 0, 2});
  ir::Node* gru =
      g->add_node(ir::OpKind::kGRU, "gru", {time_major, w, r, b, nullptr, h_in}, {y, h_out});
  gru->attrs.set("hidden_size", kHidden);
  gru->attrs.set("linear_before_reset", std::int64_t{1});
  g->add_node(ir::OpKind::kMatMul, "classifier", {y, w2}, {logits});
  for (ir::Node* node : g->nodes()) node->opset = 18;
  g->inputs = {features, context_in, h_in};
  g->outputs = {logits, context_out, h_out};
  return g;
}

BuilderConfig model_config() {
  BuilderConfig config;
  config.states = {{"context_in", "context_out"}, {"h_in", "h_out"}};
  OptimizationProfile profile;
  profile.inputs["features"] = {{1, 1, kBins}, {1, kChunk, kBins}, {8, 64, kBins}};
  config.profiles = {profile};
  return config;
}

// Six streams of 1 to 4 chunks; streams 1 and 4 end on a shorter chunk of the same length,
// stream 5 on one of its own.
StreamChunks make_streams() {
  StreamChunks streams;
  const int chunks[] = {3, 4, 1, 3, 4, 2};
  for (int s = 0; s < 6; ++s) {
    std::vector<CalibrationChunk> stream;
    for (int c = 0; c < chunks[s]; ++c) {
      std::int64_t frames = kChunk;
      if (c + 1 == chunks[s] && (s == 1 || s == 4)) frames = 4;
      if (c + 1 == chunks[s] && s == 5) frames = 2;
      CalibrationChunk chunk;
      chunk["features"] =
          random_tensor({1, frames, kBins}, static_cast<std::uint32_t>(1000 + 10 * s + c), 1.0f);
      stream.push_back(std::move(chunk));
    }
    streams.push_back(std::move(stream));
  }
  return streams;
}

// The same streams as a source, for the batch-1 runner.
class FixedStreams final : public CalibrationSource {
 public:
  explicit FixedStreams(StreamChunks streams) : streams_(std::move(streams)) {}
  Status prepare(const CalibrationModelInfo&) override { return Status::ok(); }
  std::string describe() const override { return "fixed streams"; }
  std::string fingerprint() const override { return "fixed"; }
  int stream_count() const override { return static_cast<int>(streams_.size()); }
  Expected<std::vector<CalibrationChunk>> stream(int index) override {
    return streams_.at(static_cast<std::size_t>(index));
  }

 private:
  StreamChunks streams_;
};

// Per stream, per chunk: the outputs that are not states.
using Recorded = std::vector<std::vector<std::vector<Tensor>>>;

StreamRunOptions recorder(Recorded& recorded, std::size_t streams) {
  recorded.assign(streams, {});
  StreamRunOptions options;
  options.on_outputs = [&recorded](int stream, int run, const std::vector<const Tensor*>& outs) {
    auto& runs = recorded[static_cast<std::size_t>(stream)];
    if (runs.size() <= static_cast<std::size_t>(run))
      runs.resize(static_cast<std::size_t>(run) + 1);
    for (const Tensor* t : outs) runs[static_cast<std::size_t>(run)].push_back(t->clone());
  };
  return options;
}

// Runs the graph as marked now both ways and expects the same bytes; `executions`: the batched
// runner's plan executions.
void expect_batched_equals_batch1(const ir::Graph& graph, const std::string& what,
                                  int& executions) {
  executions = -1;
  const BuilderConfig config = model_config();
  const StreamChunks streams = make_streams();
  auto plan = runtime::Plan::compile(graph, runtime::TacticPolicy::kFirstFastPrepacked);
  EXPECT_TRUE(plan.has_value()) << plan.status().to_string();
  ASSERT_TRUE(plan.has_value());
  Recorded one_at_a_time, batched;
  FixedStreams source(streams);
  const Status single =
      run_calibration_streams(graph, **plan, config, source, recorder(one_at_a_time, 6));
  EXPECT_TRUE(single.is_ok()) << single.to_string();
  auto runs = run_calibration_streams_batched(graph, **plan, config, streams, recorder(batched, 6));
  ASSERT_TRUE(runs.has_value()) << runs.status().to_string();
  executions = *runs;
  for (std::size_t s = 0; s < streams.size(); ++s) {
    ASSERT_EQ(batched[s].size(), streams[s].size()) << what << " stream " << s;
    ASSERT_EQ(one_at_a_time[s].size(), streams[s].size()) << what << " stream " << s;
    for (std::size_t c = 0; c < streams[s].size(); ++c) {
      ASSERT_EQ(batched[s][c].size(), 1u) << what;  // logits only (the states are not recorded)
      const Tensor& want = one_at_a_time[s][c][0];
      const Tensor& got = batched[s][c][0];
      ASSERT_EQ(got.dims(), want.dims()) << what << " stream " << s << " chunk " << c;
      EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), want.size_bytes()), 0)
          << what << ": stream " << s << " chunk " << c << " differs from its batch-1 run";
    }
  }
}

ir::Node* node_named(ir::Graph& graph, const std::string& name) {
  for (ir::Node* node : graph.nodes()) {
    if (node->name == name) return node;
  }
  return nullptr;
}

TEST(BatchedSensitivity, EachStreamGetsItsBatchOneOutputs) {
  auto graph = make_model();
  ASSERT_TRUE(ir::infer_graph(*graph).is_ok());
  // 17 chunks in 5 runs: chunk 0 all six streams; chunk 1 streams 0, 1, 3, 4 and stream 5's
  // short last chunk apart; chunk 2 streams 0, 1, 3, 4; chunk 3 the short last chunks of
  // streams 1 and 4 together.
  int executions = 0;
  expect_batched_equals_batch1(*graph, "fp32", executions);
  EXPECT_EQ(executions, 5);
  // Each weight layer alone in INT8, as the sensitivity pass marks it.
  namespace quantized = backends::cpu::quantized;
  for (const char* name : {"dense_in", "gru", "classifier"}) {
    ir::Node* node = node_named(*graph, name);
    ASSERT_NE(node, nullptr);
    ASSERT_TRUE(quantized::int8_candidate(*node)) << name;
    node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kInt8));
    node->attrs.set(quantized::kInputScaleAttr, 3.0f / 127);
    node->attrs.set(quantized::kInputZeroPointAttr, std::int64_t{0});
    node->attrs.set(quantized::kInputRangeAttr, std::vector<float>{-3.0f, 3.0f});
    expect_batched_equals_batch1(*graph, str_cat(name, " int8"), executions);
    EXPECT_EQ(executions, 5) << name;
    node->attrs.erase(quantized::kInputScaleAttr);
    node->attrs.erase(quantized::kInputZeroPointAttr);
    node->attrs.erase(quantized::kInputRangeAttr);
    node->attrs.erase(backends::kLayerPrecisionAttr);
  }
}

// A graph whose output does not carry the batch symbol runs one stream at a time (17 runs),
// with the same results.
TEST(BatchedSensitivity, WithoutABatchAxisStreamsRunOneAtATime) {
  auto graph = make_model();
  ASSERT_TRUE(ir::infer_graph(*graph).is_ok());
  graph->outputs[0]->shape = {};
  int executions = 0;
  expect_batched_equals_batch1(*graph, "no batch axis", executions);
  EXPECT_EQ(executions, 17);
}

// features [batch, frames, bins] (+ their mean over the batch when `mix_batch`) -> MatMul +
// ReLU -> MatMul -> logits. The batch mean makes each stream's outputs depend on the others in
// its batch, as a kernel that mixed batch rows would.
std::unique_ptr<ir::Graph> make_dense_model(bool mix_batch) {
  auto g = std::make_unique<ir::Graph>();
  using ir::Dim;
  ir::Value* features =
      g->add_value("features", DType::kF32,
                   {Dim::symbolic("batch"), Dim::symbolic("frames"), Dim::known(kBins)});
  ir::Value* w1 = g->add_constant("w1", random_tensor({kBins, kProjected}, 11, 0.2f));
  ir::Value* w2 = g->add_constant("w2", random_tensor({kProjected, kClasses}, 12, 0.4f));
  const auto value = [&](const char* name) { return g->add_value(name, DType::kF32, {}, false); };
  ir::Value* x = features;
  if (mix_batch) {
    ir::Value* axes = g->add_constant("batch_axis", Tensor::from_vector<std::int64_t>({1}, {0}));
    ir::Node* mean =
        g->add_node(ir::OpKind::kReduceMean, "batch_mean", {features, axes}, {value("batch_mean")});
    mean->attrs.set("keepdims", std::int64_t{1});
    x = value("mixed");
    g->add_node(ir::OpKind::kAdd, "mix", {features, mean->outputs[0]}, {x});
  }
  ir::Value* hidden = value("hidden");
  ir::Value* relu = value("relu");
  ir::Value* logits = value("logits");
  g->add_node(ir::OpKind::kMatMul, "dense_in", {x, w1}, {hidden});
  g->add_node(ir::OpKind::kRelu, "relu", {hidden}, {relu});
  g->add_node(ir::OpKind::kMatMul, "classifier", {relu, w2}, {logits});
  for (ir::Node* node : g->nodes()) node->opset = 18;
  g->inputs = {features};
  g->outputs = {logits};
  g->metadata["voxrt.chunk_frames"] = std::to_string(kChunk);
  return g;
}

BuildReport build_int8(bool mix_batch) {
  BuilderConfig config;
  config.precision = Precision::kInt8;
  config.autotune = false;
  OptimizationProfile profile;
  profile.inputs["features"] = {{1, 1, kBins}, {1, kChunk, kBins}, {8, 64, kBins}};
  config.profiles = {profile};
  config.int8.data = std::make_shared<FixedStreams>(make_streams());
  config.int8.sensitivity_streams = 6;
  BuildReport report;
  auto bytes = build_engine_from_graph(make_dense_model(mix_batch), 7, config, &report);
  EXPECT_TRUE(bytes.has_value()) << bytes.status().to_string();
  return report;
}

bool has_note(const BuildReport& report, const std::string& text) {
  for (const auto& note : report.notes) {
    if (note.find(text) != std::string::npos) return true;
  }
  return false;
}

// The builder checks its batched FP32 reference against one stream at a time and runs the
// sensitivity pass one stream at a time where they differ.
TEST(BatchedSensitivity, TheBuildFallsBackWhereBatchingChangesTheOutputs) {
  const BuildReport row_wise = build_int8(false);
  EXPECT_TRUE(has_note(row_wise, "streams batched")) << row_wise.notes.size();
  EXPECT_FALSE(has_note(row_wise, "differ from one stream at a time"));
  const BuildReport mixing = build_int8(true);
  EXPECT_TRUE(has_note(mixing, "differ from one stream at a time"));
  EXPECT_FALSE(has_note(mixing, "streams batched"));
  bool measured = false;
  for (const auto& layer : mixing.int8_layers) measured |= layer.output_error > 0;
  EXPECT_TRUE(measured);
}

}  // namespace
}  // namespace voxrt::builder::calibration
