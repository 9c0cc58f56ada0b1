// The Transformer-era exports of tests/models (export_transformer_models.py: torchaudio's
// Conformer, Emformer and RNN-T transcriber, wav2vec2 and HuBERT, Whisper as optimum exports it,
// NeMo- and icefall-style Conformers), built for CUDA at FP32 and FP16 and run against the CPU
// engine (which tests/models holds to onnxruntime): the same inputs as the models tests, a batch
// dimension left open by the profile wherever the export has one, and the icefall streaming encoder
// carried chunk by chunk through its caches. The ONNX files come from
// VOXRT_GPU_MODEL_DIR/transformer (scripts/pack-for-device.sh exports them with Debian's torch into
// the device bundle; the GPU machine's own torch is not used for it), else from this build's
// tests/models/transformer. Label gpu.
#include <filesystem>

#include "gpu/gpu_test_support.h"
#include "runtime/engine_impl.h"

namespace voxrt {
namespace {

using namespace gpu_test;  // NOLINT: the shared helpers of tests/gpu
namespace fs = std::filesystem;

struct NamedInput {
  std::string name;
  Tensor value;
};

fs::path transformer_dir() {
  if (const char* dir = std::getenv("VOXRT_GPU_MODEL_DIR")) {
    const fs::path p = fs::path(dir) / "transformer";
    if (fs::exists(p)) return p;
  }
  const char* build = std::getenv("VOXRT_BINARY_DIR");
  return fs::path(build ? build : ".") / "tests/models/transformer";
}

Tensor i64(Dims dims, std::vector<std::int64_t> values) {
  return Tensor::from_vector<std::int64_t>(std::move(dims), values);
}

// One profile from `smallest` to `largest` (opt = largest), inputs matched by name.
std::shared_ptr<const Engine> build_for_range(const fs::path& model, DeviceKind device,
                                              Precision precision,
                                              const std::vector<NamedInput>& smallest,
                                              const std::vector<NamedInput>& largest) {
  BuilderConfig config;
  config.device = device;
  config.precision = precision;
  config.autotune = false;  // each family's default tactic: correctness here, speed in the bench
  OptimizationProfile profile{"test", {}};
  for (std::size_t i = 0; i < largest.size(); ++i) {
    const Dims& max = largest[i].value.dims();
    profile.inputs[largest[i].name] = ShapeRange{smallest[i].value.dims(), max, max};
  }
  config.profiles.push_back(profile);
  auto bytes = build_engine_from_onnx_file(model.string(), config);
  EXPECT_TRUE(bytes) << model.filename() << ": " << bytes.status().message();
  if (!bytes) return nullptr;
  auto engine = Engine::load_bytes(std::move(*bytes));
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? *engine : nullptr;
}

// `batch_range`: the profile admits batches 1 .. the inputs' (axis 0 of every input).
std::shared_ptr<const Engine> build(const fs::path& model, DeviceKind device, Precision precision,
                                    const std::vector<NamedInput>& inputs, bool batch_range) {
  std::vector<NamedInput> smallest = inputs;
  for (auto& in : smallest) {
    Dims dims = in.value.dims();
    if (batch_range && !dims.empty()) dims[0] = 1;
    in.value = Tensor::wrap(in.value.dtype(), dims, nullptr, nullptr);
  }
  return build_for_range(model, device, precision, smallest, inputs);
}

Expected<std::vector<Tensor>> run(const Engine& engine, const std::vector<NamedInput>& inputs) {
  std::vector<Tensor> ordered;
  for (const auto& info : engine.inputs()) {
    bool found = false;
    for (const auto& in : inputs)
      if (in.name == info.name) ordered.push_back(in.value), found = true;
    if (!found) return invalid_argument("no input named ", info.name);
  }
  VOXRT_ASSIGN_OR_RETURN(auto context, engine.create_context(1));
  return context->run(ordered);
}

void expect_cuda_matches_cpu(const std::string& file, const std::vector<NamedInput>& inputs,
                             bool batch_range = true) {
  SCOPED_TRACE(file);
  const fs::path model = transformer_dir() / file;
  if (!fs::exists(model))
    GTEST_SKIP() << model << " is missing: export tests/models/export_transformer_models.py there";
  auto cpu = build(model, DeviceKind::kCpu, Precision::kFp32, inputs, batch_range);
  ASSERT_TRUE(cpu);
  auto expected = run(*cpu, inputs);
  ASSERT_TRUE(expected) << expected.status().message();
  for (Precision p : {Precision::kFp32, Precision::kFp16}) {
    SCOPED_TRACE(precision_name(p));
    auto gpu = build(model, DeviceKind::kCuda, p, inputs, batch_range);
    ASSERT_TRUE(gpu);
    auto got = run(*gpu, inputs);
    ASSERT_TRUE(got) << got.status().message();
    ASSERT_EQ(got->size(), expected->size());
    for (std::size_t o = 0; o < got->size(); ++o) {
      ASSERT_EQ((*got)[o].dims(), (*expected)[o].dims()) << "output " << o;
      EXPECT_LE(relative_error((*got)[o], (*expected)[o]), p == Precision::kFp32 ? 1e-4 : 3e-2)
          << "output " << o << " (" << gpu->outputs()[o].name << ")";
    }
  }
}

TEST(CudaTransformerModels, TorchaudioConformerEmformerAndTranscriber) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(11);
  expect_cuda_matches_cpu("ta_conformer.onnx", {{"input", random_tensor({2, 30, 80}, rng)},
                                                {"lengths", i64({2}, {30, 22})}});
  expect_cuda_matches_cpu("emformer.onnx", {{"input", random_tensor({2, 18, 64}, rng)},
                                            {"lengths", i64({2}, {18, 14})}});
  expect_cuda_matches_cpu("rnnt_transcriber.onnx", {{"input", random_tensor({2, 18, 40}, rng)},
                                                    {"lengths", i64({2}, {18, 12})}});
}

TEST(CudaTransformerModels, Wav2vec2AndHubert) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(14);
  const std::vector<NamedInput> inputs{{"waveforms", random_tensor({2, 1600}, rng)}};
  expect_cuda_matches_cpu("wav2vec2.onnx", inputs);
  expect_cuda_matches_cpu("hubert.onnx", inputs);
}

TEST(CudaTransformerModels, WhisperAsOptimumExportsIt) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(15);
  expect_cuda_matches_cpu("whisper_encoder_model.onnx",
                          {{"input_features", random_tensor({1, 16, 40}, rng)}});
  expect_cuda_matches_cpu("whisper_decoder_model.onnx",
                          {{"input_ids", i64({1, 4}, {1, 50, 7, 99})},
                           {"encoder_hidden_states", random_tensor({1, 20, 64}, rng)}});
  std::vector<NamedInput> step{{"input_ids", i64({3, 1}, {42, 3, 77})}};
  for (int layer = 0; layer < 2; ++layer)
    for (const char* side : {"decoder", "encoder"})
      for (const char* kv : {"key", "value"})
        step.push_back({"past_key_values." + std::to_string(layer) + "." + side + "." + kv,
                        random_tensor({3, 4, std::string(side) == "decoder" ? 5 : 20, 16}, rng)});
  expect_cuda_matches_cpu("whisper_decoder_with_past_model.onnx", step);
}

TEST(CudaTransformerModels, NemoConformer) {
  REQUIRE_CUDA_DEVICE();
  std::mt19937 rng(16);
  expect_cuda_matches_cpu("nemo_conformer.onnx", {{"audio_signal", random_tensor({2, 40, 64}, rng)},
                                                  {"length", i64({2}, {64, 50})}});
}

// The icefall-style streaming encoder (chunk 8, 16 cached frames, 2 layers of 64, convolution
// cache 14) carried four chunks through its caches on the GPU, against the CPU engine doing the
// same; the caches and processed_lens travel back in as the next chunk's inputs.
TEST(CudaTransformerModels, IcefallStreamingChunksMatchTheCpuThroughTheCaches) {
  REQUIRE_CUDA_DEVICE();
  const fs::path model = transformer_dir() / "icefall_conformer_streaming.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing";
  std::mt19937 rng(18);
  std::vector<NamedInput> inputs{{"x", Tensor::zeros(DType::kF32, {1, 8, 40})}};
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    inputs.push_back({"cached_key_" + n, Tensor::zeros(DType::kF32, {16, 1, 64})});
    inputs.push_back({"cached_val_" + n, Tensor::zeros(DType::kF32, {16, 1, 64})});
    inputs.push_back({"cached_conv_" + n, Tensor::zeros(DType::kF32, {1, 64, 14})});
  }
  inputs.push_back({"processed_lens", i64({1}, {0})});
  auto cpu = build(model, DeviceKind::kCpu, Precision::kFp32, inputs, false);
  auto gpu = build(model, DeviceKind::kCuda, Precision::kFp32, inputs, false);
  ASSERT_TRUE(cpu && gpu);
  std::vector<NamedInput> cpu_in = inputs, gpu_in = inputs;
  for (int chunk = 0; chunk < 4; ++chunk) {
    SCOPED_TRACE(str_cat("chunk ", chunk));
    Tensor x = random_tensor({1, 8, 40}, rng);
    cpu_in[0].value = x;
    gpu_in[0].value = x;
    auto co = run(*cpu, cpu_in);
    auto go = run(*gpu, gpu_in);
    ASSERT_TRUE(co) << co.status().message();
    ASSERT_TRUE(go) << go.status().message();
    ASSERT_EQ(go->size(), co->size());
    for (std::size_t o = 0; o < co->size(); ++o)
      EXPECT_LE(relative_error((*go)[o], (*co)[o]), 1e-4) << "output " << o;
    // Outputs: encoder_out, then the new states in the inputs' order.
    for (std::size_t s = 1; s < inputs.size(); ++s) {
      cpu_in[s].value = (*co)[s];
      gpu_in[s].value = (*go)[s];
    }
  }
}

// The same streaming encoder's caches kept in the device slot pool (key/value caches with the
// batch on axis 1, convolution caches on axis 0, the int64 processed_lens counter): streams run
// in changing batches with their states never leaving the GPU, each stream's output and final
// states equal to the CPU engine carrying that stream's states alone.
TEST(CudaSlots, StreamingConformerCachesAndCountersLiveInThePool) {
  REQUIRE_CUDA_DEVICE();
  const fs::path model = transformer_dir() / "icefall_conformer_streaming.onnx";
  if (!fs::exists(model)) GTEST_SKIP() << model << " is missing";
  std::vector<NamedInput> one{{"x", Tensor::zeros(DType::kF32, {1, 8, 40})}};
  std::vector<backends::DeviceStateSpec> specs;
  for (int i = 0; i < 2; ++i) {
    const std::string n = std::to_string(i);
    one.push_back({"cached_key_" + n, Tensor::zeros(DType::kF32, {16, 1, 64})});
    one.push_back({"cached_val_" + n, Tensor::zeros(DType::kF32, {16, 1, 64})});
    one.push_back({"cached_conv_" + n, Tensor::zeros(DType::kF32, {1, 64, 14})});
    specs.push_back({"cached_key_" + n, "new_cached_key_" + n, 1});
    specs.push_back({"cached_val_" + n, "new_cached_val_" + n, 1});
    specs.push_back({"cached_conv_" + n, "new_cached_conv_" + n, 0});
  }
  one.push_back({"processed_lens", i64({1}, {0})});
  specs.push_back({"processed_lens", "new_processed_lens", 0});
  // The GPU engine for batches of 1 to 4 streams; the CPU one runs each stream alone.
  std::vector<NamedInput> four = one;
  for (auto& in : four) {
    Dims dims = in.value.dims();
    dims[in.name.rfind("cached_key", 0) == 0 || in.name.rfind("cached_val", 0) == 0 ? 1 : 0] = 4;
    in.value = Tensor::zeros(in.value.dtype(), dims);
  }
  // Batches 1 to 4 (the caches' batch is on axis 1): a profile of batch 4 alone would let the
  // builder specialise shapes for 4, and run_slots refuses the other batches.
  auto gpu = build_for_range(model, DeviceKind::kCuda, Precision::kFp32, one, four);
  auto cpu = build(model, DeviceKind::kCpu, Precision::kFp32, one, false);
  ASSERT_TRUE(gpu && cpu);
  const auto& exe = *gpu->impl().device_executable;
  auto pooled = exe.create_session();
  ASSERT_TRUE(pooled);
  ASSERT_TRUE((*pooled)->create_state_pool(specs, 6).is_ok());
  const std::vector<int> slot_of = {5, 0, 2, 3};
  std::vector<std::vector<NamedInput>> host(4, one);
  const std::vector<std::vector<int>> rounds = {{0, 1, 2, 3}, {2, 0}, {3}, {1, 3, 0, 2}, {0, 1}};
  std::mt19937 rng(21);
  for (std::size_t r = 0; r < rounds.size(); ++r) {
    const auto& active = rounds[r];
    const auto batch = static_cast<std::int64_t>(active.size());
    Tensor x = Tensor::uninitialized(DType::kF32, {batch, 8, 40});
    std::vector<int> slots;
    std::vector<Tensor> chunks;
    for (std::size_t i = 0; i < active.size(); ++i) {
      chunks.push_back(random_tensor({1, 8, 40}, rng));
      std::memcpy(x.data<float>() + i * 320, chunks.back().data<float>(), 320 * sizeof(float));
      slots.push_back(slot_of[static_cast<std::size_t>(active[i])]);
    }
    std::vector<Tensor> outs;
    const std::vector<Tensor> ins = {x};
    const Status ran = (*pooled)->run_slots(ins, slots, outs);
    ASSERT_TRUE(ran.is_ok()) << ran.message();
    ASSERT_EQ(outs.size(), 1u);  // encoder_out only: every cache stayed in the pool
    const std::int64_t row = outs[0].element_count() / batch;
    for (std::size_t i = 0; i < active.size(); ++i) {
      auto& states = host[static_cast<std::size_t>(active[i])];
      states[0].value = chunks[i];
      auto ref = run(*cpu, states);
      ASSERT_TRUE(ref) << ref.status().message();
      Tensor mine = Tensor::uninitialized(DType::kF32, (*ref)[0].dims());
      std::memcpy(mine.raw_data(), outs[0].data<float>() + static_cast<std::int64_t>(i) * row,
                  static_cast<std::size_t>(row) * sizeof(float));
      EXPECT_LE(relative_error(mine, (*ref)[0]), 1e-4) << "round " << r << " stream " << active[i];
      for (std::size_t s = 1; s < states.size(); ++s) states[s].value = (*ref)[s];
    }
  }
  // A batch beyond the profile (5 of the pool's 6 slots) is refused with the profile's reason.
  {
    std::vector<Tensor> outs;
    const std::vector<Tensor> ins = {Tensor::zeros(DType::kF32, {5, 8, 40})};
    const std::vector<int> five = {0, 1, 2, 3, 4};
    const Status refused = (*pooled)->run_slots(ins, five, outs);
    EXPECT_FALSE(refused.is_ok());
    EXPECT_NE(refused.message().find("allowed"), std::string::npos) << refused.message();
  }
  for (std::size_t stream = 0; stream < 4; ++stream) {
    for (std::size_t s = 0; s < specs.size(); ++s) {
      auto state = (*pooled)->read_slot_state(slot_of[stream], s);
      ASSERT_TRUE(state) << state.status().message();
      EXPECT_LE(relative_error(*state, host[stream][s + 1].value), 1e-4)
          << "stream " << stream << " state " << specs[s].input;
    }
  }
}

}  // namespace
}  // namespace voxrt
