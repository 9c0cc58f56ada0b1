#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "backends/cpu/cpu_backend.h"
#include "backends/layer_precision.h"
#include "builder/build_graph.h"
#include "builder/layer_precision.h"
#include "runtime/engine_description.h"
#include "runtime/engine_format.h"
#include "runtime/engine_impl.h"
#include "runtime/state_pool.h"
#include "test_graphs.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {

std::string build_cell(BuilderConfig config = {}) {
  config.autotune = false;
  config.states = {{"state_in", "state_out"}};
  auto bytes = builder::build_engine_from_graph(testing::make_streaming_cell(), 42, config);
  EXPECT_TRUE(bytes.has_value()) << bytes.status().to_string();
  return bytes ? *bytes : std::string();
}

Tensor random_tensor(Dims dims, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (auto& v : t.span<float>()) v = normal(rng);
  return t;
}

// The cell computed by hand, for one row.
void cell_reference(const float* x, float* state, float* y) {
  const float w[4] = {0.5f, -1.0f, 2.0f, 0.25f};
  for (int i = 0; i < 4; ++i) {
    state[i] = std::tanh(x[i] * w[i] + state[i]);
    y[i] = state[i] * 2;
  }
}

TEST(Engine, BuildSerializeLoadRun) {
  auto engine = Engine::load_bytes(build_cell());
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  ASSERT_EQ((*engine)->inputs().size(), 2u);
  EXPECT_EQ((*engine)->inputs()[0].dims[0], -1);  // symbolic batch stays dynamic
  EXPECT_EQ((*engine)->metadata().at("voxrt.model_family"), "test_cell");
  auto context = (*engine)->create_context(1);
  ASSERT_TRUE(context.has_value());
  std::mt19937 rng(1);
  Tensor x = random_tensor({3, 4}, rng), s = random_tensor({3, 4}, rng);
  auto out = (*context)->run(std::vector<Tensor>{x, s});
  ASSERT_TRUE(out.has_value()) << out.status().to_string();
  for (int b = 0; b < 3; ++b) {
    float state[4], y[4];
    std::copy_n(s.data<float>() + b * 4, 4, state);
    cell_reference(x.data<float>() + b * 4, state, y);
    for (int i = 0; i < 4; ++i) {
      EXPECT_NEAR((*out)[0].data<float>()[b * 4 + i], y[i], 1e-6);
      EXPECT_NEAR((*out)[1].data<float>()[b * 4 + i], state[i], 1e-6);
    }
  }
}

TEST(Engine, RefusesBadInputsWithoutCrashing) {
  auto engine = Engine::load_bytes(build_cell());
  ASSERT_TRUE(engine.has_value());
  auto context = (*engine)->create_context(1);
  std::mt19937 rng(2);
  auto wrong_dim =
      (*context)->run(std::vector<Tensor>{random_tensor({2, 5}, rng), random_tensor({2, 5}, rng)});
  ASSERT_FALSE(wrong_dim.has_value());
  EXPECT_NE(wrong_dim.status().message().find("dim 1 must be 4"), std::string::npos)
      << wrong_dim.status().message();
  auto too_few = (*context)->run(std::vector<Tensor>{random_tensor({2, 4}, rng)});
  EXPECT_FALSE(too_few.has_value());
  auto wrong_dtype = (*context)->run(
      std::vector<Tensor>{Tensor::zeros(DType::kI64, {2, 4}), random_tensor({2, 4}, rng)});
  EXPECT_FALSE(wrong_dtype.has_value());
}

TEST(EngineFile, CorruptTruncatedAndForeignFilesAreRefusedWithTheField) {
  const std::string good = build_cell();
  ASSERT_FALSE(good.empty());
  {
    auto e = Engine::load_bytes(good.substr(0, good.size() - 7));
    ASSERT_FALSE(e.has_value());
    EXPECT_NE(e.status().message().find("truncated"), std::string::npos) << e.status().message();
  }
  {
    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x40;
    auto e = Engine::load_bytes(flipped);
    ASSERT_FALSE(e.has_value());
    EXPECT_NE(e.status().message().find("checksum"), std::string::npos) << e.status().message();
  }
  {
    std::string magic = good;
    magic[0] = 'X';
    auto e = Engine::load_bytes(magic);
    ASSERT_FALSE(e.has_value());
    EXPECT_NE(e.status().message().find("magic"), std::string::npos);
  }
  {
    std::string version = good;
    version[8] = 99;
    auto e = Engine::load_bytes(version);
    ASSERT_FALSE(e.has_value());
    EXPECT_EQ(e.status().code(), StatusCode::kVersionMismatch);
    EXPECT_NE(e.status().message().find("format_version"), std::string::npos);
  }
  for (std::size_t cut : {0ul, 8ul, 39ul, 100ul}) {
    auto e = Engine::load_bytes(good.substr(0, std::min(cut, good.size())));
    EXPECT_FALSE(e.has_value());
  }
}

TEST(EngineFile, ForeignTargetIsRefusedNamingTheField) {
  // Re-serialize with a fingerprint that needs an ISA flag no CPU has.
  std::string bytes = build_cell();
  auto parsed = runtime::deserialize_engine(bytes.data(), bytes.size(), std::make_shared<int>(0));
  ASSERT_TRUE(parsed.has_value());
  parsed->target.fingerprint = "x86_64 [avx2,imaginary_isa] test cpu";
  auto reserialized = runtime::serialize_engine(*parsed);
  ASSERT_TRUE(reserialized.has_value());
  auto e = Engine::load_bytes(*reserialized);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("imaginary_isa"), std::string::npos) << e.status().message();
}

// voxrt inspect reads what it cannot run (issue 31: it refused engines for another CPU or for
// CUDA): describe_engine_file gives the contents and says why the engine does not run here.
TEST(EngineFile, DescribedWithoutRunningWhereItCannotRun) {
  const std::string bytes = build_cell();
  auto parsed = runtime::deserialize_engine(bytes.data(), bytes.size(), std::make_shared<int>(0));
  ASSERT_TRUE(parsed.has_value());
  const std::string dir = ::testing::TempDir();
  auto write = [&](const runtime::EngineContents& contents, const std::string& name) {
    auto serialized = runtime::serialize_engine(contents);
    EXPECT_TRUE(serialized.has_value());
    const std::string path = dir + "/" + name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    std::fwrite(serialized->data(), 1, serialized->size(), f);
    std::fclose(f);
    return path;
  };
  parsed->target.fingerprint = "x86_64 [avx2,imaginary_isa] test cpu";
  const std::string foreign = write(*parsed, "foreign_cpu.engine");
  EXPECT_FALSE(Engine::load_file(foreign).has_value());
  auto described = runtime::describe_engine_file(foreign);
  ASSERT_TRUE(described.has_value()) << described.status().to_string();
  EXPECT_FALSE(described->runs_here);
  EXPECT_NE(described->runs_here.message().find("imaginary_isa"), std::string::npos);
  EXPECT_FALSE(described->inputs.empty());
  EXPECT_FALSE(described->contents.graph->nodes().empty());
  // A CUDA engine in a program without the CUDA backend (this test links none, and there is no
  // plugin beside it).
  parsed->target.device = DeviceKind::kCuda;
  const std::string cuda = write(*parsed, "cuda.engine");
  auto cuda_described = runtime::describe_engine_file(cuda);
  ASSERT_TRUE(cuda_described.has_value()) << cuda_described.status().to_string();
  EXPECT_FALSE(cuda_described->runs_here);
  EXPECT_NE(cuda_described->runs_here.message().find("this engine was built for CUDA"),
            std::string::npos)
      << cuda_described->runs_here.message();
}

TEST(StatePool, BatchedStreamsEqualStreamsRunAlone) {
  auto loaded = Engine::load_bytes(build_cell());
  ASSERT_TRUE(loaded.has_value());
  std::shared_ptr<const Engine> engine = *loaded;
  auto pool = StatePool::create(engine, 8);
  ASSERT_TRUE(pool.has_value()) << pool.status().to_string();
  auto context = engine->create_context(1);
  std::mt19937 rng(3);
  const int streams = 5, steps = 6;
  std::vector<int> slots;
  for (int i = 0; i < streams; ++i) slots.push_back(*(*pool)->acquire());
  std::vector<std::vector<float>> ref_state(streams, std::vector<float>(4, 0.f));
  for (int step = 0; step < steps; ++step) {
    // A different subset and order each step: results must not depend on batch composition.
    std::vector<int> active;
    for (int i = 0; i < streams; ++i) {
      if ((i + step) % 3 != 0) active.push_back(i);
    }
    if (step % 2) std::reverse(active.begin(), active.end());
    Tensor x = random_tensor({static_cast<std::int64_t>(active.size()), 4}, rng);
    std::vector<int> batch_slots;
    for (int i : active) batch_slots.push_back(slots[static_cast<std::size_t>(i)]);
    auto out = (*pool)->run_batch(**context, batch_slots, std::vector<Tensor>{x});
    ASSERT_TRUE(out.has_value()) << out.status().to_string();
    ASSERT_EQ(out->size(), 1u);
    for (std::size_t b = 0; b < active.size(); ++b) {
      float y[4];
      cell_reference(x.data<float>() + b * 4, ref_state[static_cast<std::size_t>(active[b])].data(),
                     y);
      for (int k = 0; k < 4; ++k) EXPECT_NEAR((*out)[0].data<float>()[b * 4 + k], y[k], 1e-6);
    }
  }
  for (int i = 0; i < streams; ++i) {
    auto state = (*pool)->read_state(slots[static_cast<std::size_t>(i)], 0);
    for (int k = 0; k < 4; ++k)
      EXPECT_NEAR(state->data<float>()[k],
                  ref_state[static_cast<std::size_t>(i)][static_cast<std::size_t>(k)], 1e-6);
  }
  // reset(): the slot's states go back to zeros (an endpoint), the other slots keep theirs.
  ASSERT_TRUE((*pool)->reset(slots[1]).is_ok());
  auto zeroed = (*pool)->read_state(slots[1], 0);
  for (float v : zeroed->span<float>()) EXPECT_EQ(v, 0.f);
  auto kept = (*pool)->read_state(slots[2], 0);
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(kept->data<float>()[k], ref_state[2][static_cast<std::size_t>(k)], 1e-6);
  // Release and reacquire: the slot starts from zeros again; over-acquiring is refused.
  ASSERT_TRUE((*pool)->release(slots[0]).is_ok());
  EXPECT_FALSE((*pool)->release(slots[0]).is_ok());
  EXPECT_FALSE((*pool)->reset(slots[0]).is_ok());  // not acquired
  auto again = (*pool)->acquire();
  ASSERT_TRUE(again.has_value());
  auto fresh = (*pool)->read_state(*again, 0);
  for (float v : fresh->span<float>()) EXPECT_EQ(v, 0.f);
  while ((*pool)->in_use() < 8) ASSERT_TRUE((*pool)->acquire().has_value());
  auto full = (*pool)->acquire();
  ASSERT_FALSE(full.has_value());
  EXPECT_EQ(full.status().code(), StatusCode::kResourceExhausted);
}

TEST(Engine, ManyThreadsShareOneEngine) {
  auto loaded = Engine::load_bytes(build_cell());
  ASSERT_TRUE(loaded.has_value());
  std::shared_ptr<const Engine> engine = *loaded;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      auto context = engine->create_context(1);
      std::mt19937 rng(static_cast<unsigned>(100 + t));
      for (int i = 0; i < 200; ++i) {
        Tensor x = random_tensor({2, 4}, rng), s = random_tensor({2, 4}, rng);
        auto out = (*context)->run(std::vector<Tensor>{x, s});
        if (!out) {
          ++failures;
          continue;
        }
        for (int b = 0; b < 2; ++b) {
          float state[4], y[4];
          std::copy_n(s.data<float>() + b * 4, 4, state);
          cell_reference(x.data<float>() + b * 4, state, y);
          for (int k = 0; k < 4; ++k) {
            if (std::fabs((*out)[0].data<float>()[b * 4 + k] - y[k]) > 1e-6) ++failures;
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// BuilderConfig::layer_precisions: names are ONNX node names, checked against the model; the
// layer made from a named node carries the precision in the engine; a folded node is a warning.
TEST(Builder, LayerPrecisionsAreCheckedAndRecorded) {
  {
    BuilderConfig config;
    config.autotune = false;
    config.layer_precisions["no_such_node"] = Precision::kFp32;
    auto bytes = builder::build_engine_from_graph(testing::make_streaming_cell(), 1, config);
    ASSERT_FALSE(bytes);
    EXPECT_NE(bytes.status().message().find("no node named 'no_such_node'"), std::string::npos)
        << bytes.status().message();
    EXPECT_NE(bytes.status().message().find("add_state"), std::string::npos)
        << "lists some names the model has: " << bytes.status().message();
  }
  {
    BuilderConfig config;
    config.layer_precisions["add_state"] = Precision::kBf16;  // the CPU runs fp32 or fp16
    const Status s = config.validate();
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("layer 'add_state' at bf16"), std::string::npos) << s.message();
  }
  auto graph = testing::make_streaming_cell();
  // A node whose result folds to a constant: its precision cannot apply.
  ir::Value* folded = graph->add_value("folded", DType::kF32, {});
  graph->add_node(ir::OpKind::kNeg, "neg_const", {graph->find_value("two")}, {folded});
  ir::Value* y2 = graph->add_value("y2", DType::kF32, {});
  graph->add_node(ir::OpKind::kMul, "scale", {graph->outputs[0], folded}, {y2});
  graph->outputs.push_back(y2);
  BuilderConfig config;
  config.autotune = false;
  config.layer_precisions["add_state"] = Precision::kFp32;
  config.layer_precisions["neg_const"] = Precision::kFp32;
  BuildReport report;
  auto bytes = builder::build_engine_from_graph(std::move(graph), 1, config, &report);
  ASSERT_TRUE(bytes) << bytes.status().message();
  bool warned = false;
  for (const auto& c : report.warnings)
    warned = warned || c.find("node 'neg_const' was folded away") != std::string::npos;
  // Warnings are not rewrites (issue 31: they were counted as such).
  for (const auto& c : report.pass_changes) EXPECT_FALSE(c.starts_with("warning:")) << c;
  EXPECT_TRUE(warned);
  auto engine = Engine::load_bytes(std::move(*bytes));
  ASSERT_TRUE(engine) << engine.status().message();
  int marked = 0;
  for (const ir::Node* node : (*engine)->impl().contents.graph->nodes()) {
    bool from_add_state = node->name == "add_state";
    for (const auto& o : node->origin) from_add_state = from_add_state || o == "add_state";
    EXPECT_EQ(node->attrs.has("voxrt.precision"), from_add_state) << node->describe();
    marked += from_add_state;
  }
  EXPECT_EQ(marked, 1);
}

// x [6, 1, 5] -> GRU (hidden 16, constant weights) -> y; y_h -> Relu -> h_relu.
std::unique_ptr<ir::Graph> make_gru_graph() {
  auto g = std::make_unique<ir::Graph>();
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-0.4f, 0.4f);
  const auto weights = [&](Dims dims) {
    Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
    for (float& v : t.span<float>()) v = uniform(rng);
    return t;
  };
  using ir::Dim;
  ir::Value* x = g->add_value("x", DType::kF32, {Dim::known(6), Dim::known(1), Dim::known(5)});
  ir::Value* w = g->add_constant("W", weights({1, 48, 5}));
  ir::Value* r = g->add_constant("R", weights({1, 48, 16}));
  ir::Value* b = g->add_constant("B", weights({1, 96}));
  ir::Value* y = g->add_value("y", DType::kF32, {});
  ir::Value* y_h = g->add_value("y_h", DType::kF32, {});
  ir::Value* h_relu = g->add_value("h_relu", DType::kF32, {});
  ir::Node* gru = g->add_node(ir::OpKind::kGRU, "gru", {x, w, r, b}, {y, y_h});
  gru->opset = 14;
  gru->attrs.set("hidden_size", std::int64_t{16});
  g->add_node(ir::OpKind::kRelu, "relu", {y_h}, {h_relu});
  g->inputs = {x};
  g->outputs = {y, h_relu};
  return g;
}

struct BuiltGru {
  std::shared_ptr<const Engine> engine;
  BuildReport report;
  const ir::Node* node(const std::string& name) const {
    for (const ir::Node* n : engine->impl().contents.graph->nodes()) {
      if (n->name == name) return n;
    }
    return nullptr;
  }
};

BuiltGru build_gru(Precision precision, std::map<std::string, Precision> layers = {}) {
  BuilderConfig config;
  config.autotune = false;
  config.precision = precision;
  config.layer_precisions = std::move(layers);
  BuiltGru built;
  auto bytes = builder::build_engine_from_graph(make_gru_graph(), 1, config, &built.report);
  EXPECT_TRUE(bytes) << bytes.status().message();
  if (!bytes) return built;
  auto engine = Engine::load_bytes(std::move(*bytes));
  EXPECT_TRUE(engine) << engine.status().message();
  if (engine) built.engine = std::move(*engine);
  return built;
}

std::string tactic_of(const ir::Node* node) {
  return node ? node->attrs.get_string("voxrt.tactic_name", "") : "(no node)";
}
Precision precision_of(const ir::Node* node) {
  return backends::layer_precision(*node, Precision::kInt8);  // int8: the attribute is missing
}

// --precision fp16 on the CPU: the recurrent layer stores R in FP16 (an fp16 tactic, recorded
// as fp16 in the engine), every other layer runs and is recorded as fp32; the outputs differ
// from the fp32 engine's by the rounding of R only.
TEST(Builder, CpuFp16RunsRecurrentWeightsInHalfAndTheRestInFp32) {
  if (!backends::cpu::supports_fp16(*make_gru_graph()->nodes()[0])) {
    GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C: no fp16 kernels";
  }
  BuiltGru fp16 = build_gru(Precision::kFp16);
  BuiltGru fp32 = build_gru(Precision::kFp32);
  ASSERT_TRUE(fp16.engine && fp32.engine);
  EXPECT_EQ(precision_of(fp16.node("gru")), Precision::kFp16);
  EXPECT_EQ(tactic_of(fp16.node("gru")), "packed_fp16");
  EXPECT_EQ(precision_of(fp16.node("relu")), Precision::kFp32);
  EXPECT_FALSE(fp32.node("gru")->attrs.has(backends::kLayerPrecisionAttr));
  EXPECT_FALSE(tactic_of(fp32.node("gru")).ends_with("_fp16")) << tactic_of(fp32.node("gru"));
  bool noted = false;
  for (const auto& change : fp16.report.notes)
    noted = noted || change.find("1 layer(s) at fp16") != std::string::npos;
  EXPECT_TRUE(noted);

  std::mt19937 rng(5);
  const Tensor x = random_tensor({6, 1, 5}, rng);
  auto fp16_context = fp16.engine->create_context(1);
  auto fp32_context = fp32.engine->create_context(1);
  ASSERT_TRUE(fp16_context && fp32_context);
  auto fp16_out = (*fp16_context)->run(std::vector<Tensor>{x});
  auto fp32_out = (*fp32_context)->run(std::vector<Tensor>{x});
  ASSERT_TRUE(fp16_out && fp32_out);
  double worst = 0;
  for (std::int64_t i = 0; i < (*fp32_out)[0].element_count(); ++i) {
    worst = std::max<double>(
        worst, std::fabs((*fp16_out)[0].data<float>()[i] - (*fp32_out)[0].data<float>()[i]));
  }
  EXPECT_GT(worst, 0.0) << "the fp16 engine gave the fp32 engine's outputs bit for bit";
  EXPECT_LT(worst, 5e-3);
}

// Layer precisions on the CPU: an fp32 layer in an fp16 engine keeps FP32 weights; fp16 asked
// for a layer without fp16 kernels is a warning and the layer runs (and is recorded) fp32.
TEST(Builder, CpuLayerPrecisionsOverrideTheEngineAndAreTruthful) {
  if (!backends::cpu::supports_fp16(*make_gru_graph()->nodes()[0])) {
    GTEST_SKIP() << "this CPU lacks AVX2/FMA/F16C: no fp16 kernels";
  }
  BuiltGru kept = build_gru(Precision::kFp16, {{"gru", Precision::kFp32}});
  ASSERT_TRUE(kept.engine);
  EXPECT_EQ(precision_of(kept.node("gru")), Precision::kFp32);
  EXPECT_FALSE(tactic_of(kept.node("gru")).ends_with("_fp16")) << tactic_of(kept.node("gru"));

  BuiltGru mixed =
      build_gru(Precision::kFp32, {{"gru", Precision::kFp16}, {"relu", Precision::kFp16}});
  ASSERT_TRUE(mixed.engine);
  EXPECT_EQ(tactic_of(mixed.node("gru")), "packed_fp16");
  EXPECT_EQ(precision_of(mixed.node("relu")), Precision::kFp32);
  bool warned = false;
  for (const auto& change : mixed.report.warnings)
    warned = warned || change.find("layer 'relu' (Relu) was asked for fp16") != std::string::npos;
  EXPECT_TRUE(warned);

  BuilderConfig bf16;
  bf16.precision = Precision::kBf16;
  const Status s = bf16.validate();
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("precision bf16 is not available on the CPU backend"),
            std::string::npos)
      << s.message();
}

// Several optimization profiles: each profile's tactics are timed at its own opt shapes and
// recorded per node; profile 0's stay in voxrt.tactic.
TEST(Builder, EachProfileGetsTacticsTimedAtItsOptShapes) {
  auto graph = testing::make_streaming_cell();  // moved into the first build
  BuilderConfig config;
  config.autotune = true;
  config.timing_iterations = 2;
  config.states = {{"state_in", "state_out"}};
  config.profiles = {{"alone", {{"x", {{1, 4}, {1, 4}, {1, 4}}}}},
                     {"batched", {{"x", {{2, 4}, {16, 4}, {64, 4}}}}}};
  const std::string cache = ::testing::TempDir() + "/profiles.cache";
  std::remove(cache.c_str());
  config.timing_cache_path = cache;
  BuildReport report;
  auto bytes = builder::build_engine_from_graph(std::move(graph), 1, config, &report);
  ASSERT_TRUE(bytes) << bytes.status().message();
  // A second build with the cache times nothing and records the same tactics per profile.
  BuildReport again_report;
  auto again =
      builder::build_engine_from_graph(testing::make_streaming_cell(), 1, config, &again_report);
  ASSERT_TRUE(again) << again.status().message();
  EXPECT_EQ(again_report.tactics_timed, 0);
  EXPECT_GT(again_report.timing_cache_hits, 0);
  const auto per_profile_tactics = [](const std::string& engine_bytes) {
    auto parsed = runtime::deserialize_engine(engine_bytes.data(), engine_bytes.size(),
                                              std::make_shared<int>(0));
    std::vector<std::vector<std::int64_t>> all;
    if (parsed) {
      for (const ir::Node* node : parsed->graph->nodes())
        all.push_back(node->attrs.get_ints(runtime::kProfileTacticsAttr));
    }
    return all;
  };
  EXPECT_EQ(per_profile_tactics(*bytes), per_profile_tactics(*again));
  std::remove(cache.c_str());
  bool timed_at_profile_1 = false;
  for (const auto& t : report.tactic_timings) timed_at_profile_1 |= t.profile == 1;
  EXPECT_TRUE(timed_at_profile_1);
  auto engine = Engine::load_bytes(std::move(*bytes));
  ASSERT_TRUE(engine) << engine.status().message();
  int tuned = 0;
  for (const ir::Node* node : (*engine)->impl().contents.graph->nodes()) {
    if (!node->attrs.has(runtime::kTacticAttr)) continue;
    ++tuned;
    const auto ids = node->attrs.get_ints(runtime::kProfileTacticsAttr);
    const auto names = node->attrs.get_strings(runtime::kProfileTacticNamesAttr);
    ASSERT_EQ(ids.size(), 2u) << node->describe();
    ASSERT_EQ(names.size(), 2u) << node->describe();
    EXPECT_EQ(ids[0], node->attrs.get_int(runtime::kTacticAttr, -1)) << node->describe();
    EXPECT_EQ(names[0], node->attrs.get_string(runtime::kTacticNameAttr, "")) << node->describe();
  }
  EXPECT_GT(tuned, 0);
}

// The runtime runs each profile's recorded tactics: a profile whose tactics differ gets its own
// plan, and a run picks the plan of the first profile that admits its shapes.
// enqueue / output_dims take device memory: a CPU engine refuses them with a message that says
// what to use instead (the CUDA side is tested in tests/gpu).
TEST(Engine, DeviceMemoryRunsAreRefusedByCpuEngines) {
  auto engine = Engine::load_bytes(build_cell());
  ASSERT_TRUE(engine) << engine.status().message();
  auto context = (*engine)->create_context(1);
  ASSERT_TRUE(context);
  float x[4] = {}, s[4] = {}, y[4] = {}, s_out[4] = {};
  const std::vector<DeviceTensor> inputs = {{x, DType::kF32, {1, 4}}, {s, DType::kF32, {1, 4}}};
  const std::vector<DeviceTensor> outputs = {{y, DType::kF32, {1, 4}},
                                             {s_out, DType::kF32, {1, 4}}};
  const Status enqueued = (*context)->enqueue(inputs, outputs, nullptr);
  EXPECT_EQ(enqueued.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(enqueued.message().find("CPU engine: use run"), std::string::npos)
      << enqueued.message();
  auto dims = (*context)->output_dims(inputs);
  ASSERT_FALSE(dims);
  EXPECT_EQ(dims.status().code(), StatusCode::kFailedPrecondition);
}

TEST(Engine, RunsThePlanOfTheProfileTheInputsFit) {
  BuilderConfig config;
  config.profiles = {{"alone", {{"x", {{1, 4}, {1, 4}, {1, 4}}}}},
                     {"batched", {{"x", {{2, 4}, {16, 4}, {64, 4}}}}}};
  std::string bytes = build_cell(config);
  auto parsed = runtime::deserialize_engine(bytes.data(), bytes.size(), std::make_shared<int>(0));
  ASSERT_TRUE(parsed.has_value());
  // Profile 1 runs a layer (the fused cell, whatever the passes made of it) on the reference
  // tactic (id 0), profile 0 on what the build chose.
  ir::Node* layer_node = nullptr;
  for (ir::Node* node : parsed->graph->nodes()) {
    if (!layer_node && node->attrs.get_int(runtime::kTacticAttr, 0) > 0) layer_node = node;
  }
  ASSERT_NE(layer_node, nullptr) << "no layer with a non-reference tactic";
  const std::string layer = layer_node->name;
  const std::int64_t chosen = layer_node->attrs.get_int(runtime::kTacticAttr, -1);
  ASSERT_NE(chosen, 0) << "the build should have chosen a non-reference tactic";
  layer_node->attrs.set(runtime::kProfileTacticsAttr, std::vector<std::int64_t>{chosen, 0});
  layer_node->attrs.set(
      runtime::kProfileTacticNamesAttr,
      std::vector<std::string>{layer_node->attrs.get_string(runtime::kTacticNameAttr, ""),
                               "reference"});
  auto reserialized = runtime::serialize_engine(*parsed);
  ASSERT_TRUE(reserialized.has_value());
  auto engine = Engine::load_bytes(*reserialized);
  ASSERT_TRUE(engine) << engine.status().message();
  const EngineImpl& impl = (*engine)->impl();
  ASSERT_EQ(impl.profile_plans.size(), 2u);
  ASSERT_NE(impl.profile_plans[1], nullptr);
  const auto tactic_of_layer = [&](const runtime::Plan& plan) {
    for (const auto& [node, name] : plan.tactics())
      if (node->name == layer) return name;
    return std::string("(none)");
  };
  EXPECT_EQ(tactic_of_layer(impl.plan_for_profile(1)), "reference");
  EXPECT_NE(tactic_of_layer(impl.plan_for_profile(0)), "reference");

  ExecutionContextImpl context(impl, 1);
  std::mt19937 rng(2);
  for (const std::int64_t batch : {1, 5}) {
    Tensor x = random_tensor({batch, 4}, rng), s = random_tensor({batch, 4}, rng);
    auto out = context.run(std::vector<Tensor>{x, s});
    ASSERT_TRUE(out) << out.status().message();
    EXPECT_EQ(context.last_plan(), &impl.plan_for_profile(batch == 1 ? 0 : 1));
    for (std::int64_t b = 0; b < batch; ++b) {
      float state[4], y[4];
      std::copy_n(s.data<float>() + b * 4, 4, state);
      cell_reference(x.data<float>() + b * 4, state, y);
      for (int i = 0; i < 4; ++i) EXPECT_NEAR((*out)[0].data<float>()[b * 4 + i], y[i], 1e-5);
    }
  }
}

// --precision fp16 allows FP16 weights: a layer whose chosen tactics all keep FP32 weights (they
// were faster) is recorded fp32 after tuning, with a note; one FP16 choice keeps it fp16.
TEST(Builder, TunedLayersRecordTheirRealPrecision) {
  auto graph = make_gru_graph();
  ir::Node* gru = graph->nodes()[0];
  gru->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kFp16));
  gru->attrs.set(runtime::kTacticNameAttr, std::string("packed_fp16"));
  gru->attrs.set(runtime::kProfileTacticNamesAttr,
                 std::vector<std::string>{"packed_fp16", "onednn"});
  std::vector<std::string> notes;
  builder::record_tuned_cpu_precisions(*graph, notes);
  EXPECT_EQ(precision_of(gru), Precision::kFp16);
  EXPECT_TRUE(notes.empty());

  gru->attrs.set(runtime::kTacticNameAttr, std::string("onednn"));
  gru->attrs.set(runtime::kProfileTacticNamesAttr, std::vector<std::string>{"onednn", "packed"});
  builder::record_tuned_cpu_precisions(*graph, notes);
  EXPECT_EQ(precision_of(gru), Precision::kFp32);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("layer 'gru' runs in fp32"), std::string::npos) << notes[0];
}

TEST(Builder, ProfilesAreValidatedAndStored) {
  BuilderConfig config;
  config.autotune = false;
  config.profiles = {OptimizationProfile{"p0",
                                         {{"x", ShapeRange{{1, 4}, {2, 4}, {8, 4}}},
                                          {"state_in", ShapeRange{{1, 4}, {2, 4}, {8, 4}}}}}};
  auto bytes = builder::build_engine_from_graph(testing::make_streaming_cell(), 1, config);
  ASSERT_TRUE(bytes.has_value()) << bytes.status().to_string();
  auto engine = Engine::load_bytes(*bytes);
  ASSERT_TRUE(engine.has_value());
  auto context = (*engine)->create_context(1);
  std::mt19937 rng(4);
  auto too_big =
      (*context)->run(std::vector<Tensor>{random_tensor({9, 4}, rng), random_tensor({9, 4}, rng)});
  ASSERT_FALSE(too_big.has_value());
  // The error names the profile, the input, what it got and what the profile allows.
  EXPECT_NE(too_big.status().message().find(
                "fit no optimization profile of the engine:\n  profile 'p0': input 'x' is 9x4, "
                "allowed 1x4 .. 8x4"),
            std::string::npos)
      << too_big.status().message();
  EXPECT_TRUE((*context)
                  ->run(std::vector<Tensor>{random_tensor({8, 4}, rng), random_tensor({8, 4}, rng)})
                  .has_value());
  config.profiles[0].inputs["x"].min = {3, 4};  // min > opt
  EXPECT_FALSE(
      builder::build_engine_from_graph(testing::make_streaming_cell(), 1, config).has_value());
}

// A run takes the first profile that admits its shapes: a later profile inside an earlier one is
// never used, and the build says so; one that reaches beyond it is not flagged.
TEST(Builder, AProfileAnEarlierOneCoversIsReported) {
  const auto warnings_for = [](std::vector<OptimizationProfile> profiles) {
    BuilderConfig config;
    config.autotune = false;
    config.profiles = std::move(profiles);
    BuildReport report;
    auto bytes =
        builder::build_engine_from_graph(testing::make_streaming_cell(), 1, config, &report);
    EXPECT_TRUE(bytes) << bytes.status().message();
    std::vector<std::string> found;
    for (const auto& change : report.warnings)
      if (change.find("is never used") != std::string::npos) found.push_back(change);
    return found;
  };
  const OptimizationProfile wide{"wide", {{"x", ShapeRange{{1, 4}, {8, 4}, {64, 4}}}}};
  const OptimizationProfile inside{"inside", {{"x", ShapeRange{{1, 4}, {1, 4}, {1, 4}}}}};
  const OptimizationProfile beyond{"beyond", {{"x", ShapeRange{{32, 4}, {128, 4}, {256, 4}}}}};
  auto shadowed = warnings_for({wide, inside});
  ASSERT_EQ(shadowed.size(), 1u);
  EXPECT_NE(shadowed[0].find("profile 'inside' is never used"), std::string::npos) << shadowed[0];
  EXPECT_TRUE(warnings_for({inside, wide}).empty());
  EXPECT_TRUE(warnings_for({wide, beyond}).empty());
}

}  // namespace
}  // namespace voxrt
