// The builder's INT8 step on a small streaming model (dense -> ReLU -> GRU with a carried state
// -> final projection): which layers it quantizes, determinism, the calibration cache, the
// fallback by measurement, and the three kinds of calibration data.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/layer_precision.h"
#include "builder/build_graph.h"
#include "onnx_import/importer.h"
#include "voxrt/calibration.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

constexpr std::int64_t kBins = 80, kHidden = 32, kProjected = 24, kClasses = 10, kChunk = 16;

Tensor random_tensor(Dims dims, std::uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (float& v : t.span<float>()) v = dist(rng);
  return t;
}

// features [batch, frames, 80] -> MatMul + ReLU -> GRU (state h_in -> h_out) -> MatMul -> logits
std::unique_ptr<ir::Graph> make_streaming_model() {
  auto g = std::make_unique<ir::Graph>();
  using ir::Dim;
  ir::Value* features =
      g->add_value("features", DType::kF32,
                   {Dim::symbolic("batch"), Dim::symbolic("frames"), Dim::known(kBins)});
  ir::Value* h_in = g->add_value("h_in", DType::kF32,
                                 {Dim::known(1), Dim::symbolic("batch"), Dim::known(kHidden)});
  ir::Value* w1 = g->add_constant("w1", random_tensor({kBins, kProjected}, 1, 0.15f));
  ir::Value* w = g->add_constant("gru_w", random_tensor({1, 3 * kHidden, kProjected}, 2, 0.25f));
  ir::Value* r = g->add_constant("gru_r", random_tensor({1, 3 * kHidden, kHidden}, 3, 0.25f));
  ir::Value* b = g->add_constant("gru_b", random_tensor({1, 6 * kHidden}, 4, 0.1f));
  ir::Value* w2 = g->add_constant("w2", random_tensor({kHidden, kClasses}, 5, 0.4f));
  ir::Value* projected = g->add_value("projected", DType::kF32, {}, false);
  ir::Value* relu = g->add_value("relu", DType::kF32, {}, false);
  ir::Value* time_major = g->add_value("time_major", DType::kF32, {}, false);
  ir::Value* y = g->add_value("gru_y", DType::kF32, {}, false);
  ir::Value* h_out = g->add_value("h_out", DType::kF32, {}, false);
  ir::Value* logits = g->add_value("logits", DType::kF32, {}, false);
  g->add_node(ir::OpKind::kMatMul, "dense_in", {features, w1}, {projected});
  g->add_node(ir::OpKind::kRelu, "relu", {projected}, {relu});
  ir::Node* transpose = g->add_node(ir::OpKind::kTranspose, "to_time_major", {relu}, {time_major});
  transpose->attrs.set("perm", std::vector<std::int64_t>{1, 0, 2});
  ir::Node* gru =
      g->add_node(ir::OpKind::kGRU, "gru", {time_major, w, r, b, nullptr, h_in}, {y, h_out});
  gru->attrs.set("hidden_size", kHidden);
  gru->attrs.set("linear_before_reset", std::int64_t{1});
  g->add_node(ir::OpKind::kMatMul, "classifier", {y, w2}, {logits});
  for (ir::Node* node : g->nodes()) node->opset = 17;
  g->inputs = {features, h_in};
  g->outputs = {logits, h_out};
  g->metadata["voxrt.chunk_frames"] = std::to_string(kChunk);
  return g;
}

// Deterministic streams of random "features".
class RandomStreams final : public CalibrationSource {
 public:
  RandomStreams(int streams, int chunks, float scale = 1.0f)
      : streams_(streams), chunks_(chunks), scale_(scale) {}
  Status prepare(const CalibrationModelInfo&) override { return Status::ok(); }
  std::string describe() const override { return "random streams"; }
  std::string fingerprint() const override {
    return str_cat("random ", streams_, " ", chunks_, " ", scale_);
  }
  int stream_count() const override { return streams_; }
  Expected<std::vector<CalibrationChunk>> stream(int index) override {
    std::vector<CalibrationChunk> chunks;
    for (int c = 0; c < chunks_; ++c) {
      CalibrationChunk chunk;
      chunk["features"] = random_tensor({1, kChunk, kBins},
                                        static_cast<std::uint32_t>(100 + index * 10 + c), scale_);
      chunks.push_back(std::move(chunk));
    }
    return chunks;
  }

 private:
  int streams_, chunks_;
  float scale_;
};

BuilderConfig int8_config() {
  BuilderConfig config;
  config.precision = Precision::kInt8;
  config.autotune = false;
  config.states = {{"h_in", "h_out"}};
  OptimizationProfile profile;
  profile.name = "stream";
  profile.inputs["features"] = {{1, 1, kBins}, {1, kChunk, kBins}, {4, 64, kBins}};
  profile.inputs["h_in"] = {{1, 1, kHidden}, {1, 1, kHidden}, {1, 4, kHidden}};
  config.profiles = {profile};
  config.int8.data = std::make_shared<RandomStreams>(6, 3);
  config.int8.sensitivity_streams = 2;
  return config;
}

struct Built {
  std::string bytes;
  BuildReport report;
};

Built build(const BuilderConfig& config, std::unique_ptr<ir::Graph> graph = make_streaming_model(),
            std::uint64_t hash = 42) {
  Built built;
  auto bytes = builder::build_engine_from_graph(std::move(graph), hash, config, &built.report);
  EXPECT_TRUE(bytes.has_value()) << bytes.status().to_string();
  if (bytes) built.bytes = std::move(*bytes);
  return built;
}

const Int8LayerReport* layer(const BuildReport& report, const std::string& node) {
  for (const auto& l : report.int8_layers) {
    if (l.node == node) return &l;
  }
  return nullptr;
}

std::vector<Tensor> run_chunk(const std::string& bytes, std::uint32_t seed) {
  auto engine = Engine::load_bytes(bytes);
  EXPECT_TRUE(engine.has_value()) << engine.status().to_string();
  auto context = (*engine)->create_context(1);
  std::vector<Tensor> inputs{random_tensor({1, kChunk, kBins}, seed, 1.0f),
                             random_tensor({1, 1, kHidden}, seed + 1, 0.3f)};
  auto outputs = (*context)->run(inputs);
  EXPECT_TRUE(outputs.has_value()) << outputs.status().to_string();
  return outputs ? *outputs : std::vector<Tensor>{};
}

double relative_error(const Tensor& a, const Tensor& b) {
  double num = 0, den = 0;
  for (std::int64_t i = 0; i < a.element_count(); ++i) {
    const double d = double{a.data<float>()[i]} - b.data<float>()[i];
    num += d * d;
    den += double{b.data<float>()[i]} * b.data<float>()[i];
  }
  return std::sqrt(num / den);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / str_cat("voxrt_calibration_", name, "_", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(Int8Build, QuantizesDenseAndRecurrentKeepsTheFinalProjection) {
  const Built built = build(int8_config());
  ASSERT_EQ(built.report.int8_layers.size(), 3u);
  const Int8LayerReport* dense = layer(built.report, "dense_in");
  const Int8LayerReport* gru = layer(built.report, "gru");
  const Int8LayerReport* classifier = layer(built.report, "classifier");
  ASSERT_TRUE(dense && gru && classifier);
  EXPECT_TRUE(dense->int8);
  EXPECT_TRUE(gru->int8);
  EXPECT_FALSE(classifier->int8);
  EXPECT_EQ(classifier->reason, "final projection (fp32 by default)");
  // The GRU's input is a ReLU's output: one-sided, so asymmetric with zero point 0.
  EXPECT_EQ(gru->input_zero_point, 0);
  EXPECT_GE(gru->input_min, 0.0f);
  // The features are two-sided.
  EXPECT_LT(dense->input_min, 0.0f);
  for (const auto* l : {dense, gru, classifier}) {
    EXPECT_GT(l->output_error, 0.0) << l->node;
    EXPECT_LT(l->output_error, 0.1) << l->node;
    EXPECT_GT(l->input_scale, 0.0f);
  }
  // The engine runs, and its outputs are within the quantization error of the FP32 engine's.
  BuilderConfig fp32 = int8_config();
  fp32.precision = Precision::kFp32;
  const Built reference = build(fp32);
  const auto want = run_chunk(reference.bytes, 7);
  const auto got = run_chunk(built.bytes, 7);
  ASSERT_EQ(got.size(), 2u);
  const double error = relative_error(got[0], want[0]);
  EXPECT_GT(error, 0.0);
  EXPECT_LT(error, 0.05);
}

TEST(Int8Build, TheSameDataGivesTheSameScalesAndEngine) {
  const Built first = build(int8_config());
  const Built second = build(int8_config());
  ASSERT_EQ(first.report.int8_layers.size(), second.report.int8_layers.size());
  for (std::size_t i = 0; i < first.report.int8_layers.size(); ++i) {
    EXPECT_EQ(first.report.int8_layers[i].input_scale, second.report.int8_layers[i].input_scale);
    EXPECT_EQ(first.report.int8_layers[i].input_zero_point,
              second.report.int8_layers[i].input_zero_point);
    EXPECT_EQ(first.report.int8_layers[i].output_error, second.report.int8_layers[i].output_error);
  }
  // (The engines differ only in the timings they record.)
  const auto a = run_chunk(first.bytes, 9), b = run_chunk(second.bytes, 9);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].size_bytes()), 0);
  // Other data, other scales.
  BuilderConfig louder = int8_config();
  louder.int8.data = std::make_shared<RandomStreams>(6, 3, 3.0f);
  const Built third = build(louder);
  EXPECT_NE(layer(first.report, "dense_in")->input_scale,
            layer(third.report, "dense_in")->input_scale);
}

TEST(Int8Build, CacheSkipsCalibrationUntilTheModelOrFrontEndChanges) {
  const fs::path dir = fresh_dir("cache");
  BuilderConfig config = int8_config();
  config.int8.cache_path = (dir / "int8.calib").string();
  const Built calibrated = build(config);
  ASSERT_TRUE(fs::exists(config.int8.cache_path));
  // Without the data: the cache alone gives the same engine.
  BuilderConfig from_cache = config;
  from_cache.int8.data = nullptr;
  const Built cached = build(from_cache);
  const auto want = run_chunk(calibrated.bytes, 3), got = run_chunk(cached.bytes, 3);
  ASSERT_EQ(want.size(), got.size());
  EXPECT_EQ(std::memcmp(want[0].raw_data(), got[0].raw_data(), want[0].size_bytes()), 0);
  ASSERT_EQ(cached.report.int8_layers.size(), calibrated.report.int8_layers.size());
  for (std::size_t i = 0; i < cached.report.int8_layers.size(); ++i) {
    EXPECT_EQ(cached.report.int8_layers[i].input_scale,
              calibrated.report.int8_layers[i].input_scale);
    EXPECT_EQ(cached.report.int8_layers[i].int8, calibrated.report.int8_layers[i].int8);
  }
  bool skipped = false;
  for (const auto& note : cached.report.notes)
    skipped |= note.find("calibration skipped") != std::string::npos;
  EXPECT_TRUE(skipped);
  // Another model file: the cache does not apply, and without data that is an error.
  auto other_model = builder::build_engine_from_graph(make_streaming_model(), 43, from_cache);
  ASSERT_FALSE(other_model.has_value());
  EXPECT_NE(other_model.status().message().find("calibration needs data"), std::string::npos)
      << other_model.status().message();
  // Another front end (the model's voxrt.feature.* metadata), the same.
  auto graph = make_streaming_model();
  graph->metadata["voxrt.feature.num_bins"] = "40";
  auto other_front_end = builder::build_engine_from_graph(std::move(graph), 42, from_cache);
  EXPECT_FALSE(other_front_end.has_value());
  // With data, a stale cache is recalibrated and rewritten.
  BuilderConfig other_data = config;
  other_data.int8.data = std::make_shared<RandomStreams>(5, 2);
  const Built recalibrated = build(other_data);
  bool noted = false;
  for (const auto& note : recalibrated.report.notes)
    noted |= note.find("the calibration data changed") != std::string::npos;
  EXPECT_TRUE(noted);
  fs::remove_all(dir);
}

TEST(Int8Build, ErrorsOverridesAndFallback) {
  BuilderConfig no_data = int8_config();
  no_data.int8.data = nullptr;
  auto refused = builder::build_engine_from_graph(make_streaming_model(), 42, no_data);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("--calibration-data"), std::string::npos);

  // --layer-precision gru:fp32 takes the GRU out; classifier:int8 puts the projection in.
  BuilderConfig overridden = int8_config();
  overridden.layer_precisions = {{"gru", Precision::kFp32}, {"classifier", Precision::kInt8}};
  const Built built = build(overridden);
  EXPECT_EQ(layer(built.report, "gru"), nullptr);
  ASSERT_NE(layer(built.report, "classifier"), nullptr);
  EXPECT_TRUE(layer(built.report, "classifier")->int8);

  // A limit no INT8 layer meets sends all back to fp32, most sensitive first.
  BuilderConfig strict = int8_config();
  strict.int8.max_output_error = 1e-9;
  const Built fallback = build(strict);
  for (const auto& l : fallback.report.int8_layers) {
    EXPECT_FALSE(l.int8) << l.node;
    if (l.node != "classifier") {
      EXPECT_EQ(l.reason.rfind("sensitive", 0), 0u) << l.reason;
    }
  }
  // A generous one keeps them.
  BuilderConfig loose = int8_config();
  loose.int8.max_output_error = 0.5;
  const Built kept = build(loose);
  EXPECT_TRUE(layer(kept.report, "gru")->int8);
  EXPECT_TRUE(layer(kept.report, "dense_in")->int8);
}

TEST(Int8Build, TensorSetData) {
  const fs::path dir = fresh_dir("tensor_sets");
  for (int set = 0; set < 3; ++set) {
    const fs::path folder = dir / str_cat("test_data_set_", set);
    fs::create_directories(folder);
    ASSERT_TRUE(onnx_import::write_tensor_proto_file(
                    (folder / "input_0.pb").string(),
                    random_tensor({1, kChunk, kBins}, 50 + set, 1.0f), "features")
                    .is_ok());
  }
  auto source = make_calibration_source(dir.string());
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  EXPECT_EQ((*source)->stream_count(), 3);
  BuilderConfig config = int8_config();
  config.int8.data = *source;
  const Built built = build(config);
  EXPECT_TRUE(layer(built.report, "gru")->int8);
  fs::remove_all(dir);
}

// A 16-bit mono WAV of `seconds` of a tone in noise.
void write_wav(const fs::path& path, double seconds, double hz, std::uint32_t seed) {
  const int rate = 16000;
  const auto samples = static_cast<std::uint32_t>(seconds * rate);
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0.0, 0.05);
  std::ofstream out(path, std::ios::binary);
  auto u32 = [&](std::uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](std::uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  out.write("RIFF", 4);
  u32(36 + samples * 2);
  out.write("WAVEfmt ", 8);
  u32(16);
  u16(1);
  u16(1);
  u32(rate);
  u32(rate * 2);
  u16(2);
  u16(16);
  out.write("data", 4);
  u32(samples * 2);
  for (std::uint32_t i = 0; i < samples; ++i) {
    const double v = 0.3 * std::sin(2 * M_PI * hz * i / rate) + noise(rng);
    u16(static_cast<std::uint16_t>(
        static_cast<std::int16_t>(std::lround(std::clamp(v, -1.0, 1.0) * 32767))));
  }
}

TEST(Int8Build, AudioThroughTheModelsFrontEndInStreamingChunks) {
  const fs::path dir = fresh_dir("audio");
  fs::create_directories(dir / "sub");
  write_wav(dir / "a.wav", 1.0, 440, 1);
  write_wav(dir / "sub" / "b.wav", 0.5, 220, 2);
  std::ofstream(dir / "notes.txt") << "not audio";
  auto source = make_calibration_source(dir.string());
  ASSERT_TRUE(source.has_value()) << source.status().to_string();
  ASSERT_EQ((*source)->stream_count(), 2);
  auto graph = make_streaming_model();
  CalibrationModelInfo info;
  info.metadata = graph->metadata;
  info.inputs = {{"features", DType::kF32, {-1, -1, kBins}, false},
                 {"h_in", DType::kF32, {1, -1, kHidden}, true}};
  ASSERT_TRUE((*source)->prepare(info).is_ok());
  // 1 s: 98 frames of 25 ms every 10 ms -> six 16-frame chunks and a 2-frame tail.
  auto chunks = (*source)->stream(0);
  ASSERT_TRUE(chunks.has_value()) << chunks.status().to_string();
  ASSERT_EQ(chunks->size(), 7u);
  EXPECT_EQ(chunks->front().at("features").dims(), (Dims{1, kChunk, kBins}));
  EXPECT_EQ(chunks->back().at("features").dims(), (Dims{1, 2, kBins}));
  // A model without a chunk in its metadata is not a streaming speech model.
  CalibrationModelInfo no_chunk = info;
  no_chunk.metadata.erase("voxrt.chunk_frames");
  auto fresh = make_audio_calibration_source(dir.string());
  ASSERT_TRUE(fresh.has_value());
  const Status refused = (*fresh)->prepare(no_chunk);
  EXPECT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("voxrt.chunk_frames"), std::string::npos);
  // And a whole build on it.
  BuilderConfig config = int8_config();
  config.int8.data = *source;
  const Built built = build(config, std::move(graph));
  EXPECT_TRUE(layer(built.report, "dense_in")->int8);
  EXPECT_FALSE(make_calibration_source((dir / "sub" / "missing").string()).has_value());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace voxrt

namespace voxrt {
namespace {

// A streaming state that carries a dense layer's result to the next chunk (as the default
// model's conv2_state_out carries the last frames of conv1's output) does not make that layer
// the final projection: it stays int8.
TEST(Int8Build, AStateCarryingADenseResultIsNotAFinalProjection) {
  auto graph = make_streaming_model();
  using ir::Dim;
  ir::Value* carried_in =
      graph->add_value("carried_in", DType::kF32,
                       {Dim::symbolic("batch"), Dim::symbolic("frames"), Dim::known(kProjected)});
  ir::Value* carried_out = graph->add_value("carried_out", DType::kF32, {}, false);
  ir::Value* relu = nullptr;
  for (ir::Node* node : graph->nodes()) {
    if (node->name == "relu") relu = node->outputs[0];
  }
  ASSERT_NE(relu, nullptr);
  ir::Node* add = graph->add_node(ir::OpKind::kAdd, "carry", {relu, carried_in}, {carried_out});
  add->opset = 17;
  graph->inputs.push_back(carried_in);
  graph->outputs.push_back(carried_out);
  BuilderConfig config = int8_config();
  config.states.push_back({"carried_in", "carried_out"});
  config.profiles[0].inputs["carried_in"] = {
      {1, 1, kProjected}, {1, kChunk, kProjected}, {4, 64, kProjected}};
  const Built built = build(config, std::move(graph));
  ASSERT_NE(layer(built.report, "dense_in"), nullptr);
  EXPECT_TRUE(layer(built.report, "dense_in")->int8) << layer(built.report, "dense_in")->reason;
  EXPECT_FALSE(layer(built.report, "classifier")->int8);
}

}  // namespace
}  // namespace voxrt
