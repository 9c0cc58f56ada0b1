// Whole models against the real onnxruntime (CPU), rtol 1e-4 / atol 1e-5, on random inputs:
// Silero VAD v5 with carried state, the openWakeWord chain (CC BY-NC-SA: fetched for tests
// only), and DS2-style and Conformer models exported from PyTorch at test time.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>

#include "ort/ort_bridge.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {
namespace fs = std::filesystem;

fs::path source_dir() {
  return std::getenv("VOXRT_SOURCE_DIR") ? std::getenv("VOXRT_SOURCE_DIR") : ".";
}
fs::path binary_dir() {
  return std::getenv("VOXRT_BINARY_DIR") ? std::getenv("VOXRT_BINARY_DIR") : ".";
}
fs::path third_party_model(const std::string& name) {
  return source_dir() / ".third_party/models" / name;
}

struct Input {
  std::string name;
  Tensor value;
  bool engine_takes_it = true;  // false: bound at build time (--fixed-input) in voxrt
};

Tensor random_f32(Dims dims, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.f, scale);
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (auto& v : t.span<float>()) v = normal(rng);
  return t;
}

// Builds the model, runs voxrt and onnxruntime on the same inputs, compares every output.
void expect_matches_onnxruntime(const fs::path& model, BuilderConfig config,
                                const std::vector<Input>& inputs, double rtol = 1e-4,
                                double atol = 1e-5) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing: run scripts/fetch-third-party.sh";
  config.autotune = false;
  BuildReport report;
  auto bytes = build_engine_from_onnx_file(model.string(), config, &report);
  ASSERT_TRUE(bytes.has_value()) << bytes.status().to_string();
  auto engine = Engine::load_bytes(std::move(*bytes));
  ASSERT_TRUE(engine.has_value()) << engine.status().to_string();
  std::vector<Tensor> engine_inputs;
  std::vector<std::string> names;
  std::vector<Tensor> ort_inputs;
  for (const auto& info : (*engine)->inputs()) {
    bool found = false;
    for (const auto& in : inputs) {
      if (in.name == info.name && in.engine_takes_it) {
        engine_inputs.push_back(in.value);
        found = true;
      }
    }
    ASSERT_TRUE(found) << "the test gives no value for engine input '" << info.name << "'";
  }
  for (const auto& in : inputs) {
    names.push_back(in.name);
    ort_inputs.push_back(in.value);
  }
  std::vector<std::string> output_names;
  for (const auto& o : (*engine)->outputs()) output_names.push_back(o.name);
  auto context = (*engine)->create_context(1);
  auto ours = (*context)->run(engine_inputs);
  ASSERT_TRUE(ours.has_value()) << ours.status().to_string();
  auto reference = ort::run_onnxruntime(model.string(), names, ort_inputs, output_names);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  ASSERT_EQ(ours->size(), reference->outputs.size());
  for (std::size_t i = 0; i < ours->size(); ++i) {
    const Tensor& a = (*ours)[i];
    const Tensor& b = reference->outputs[i];
    ASSERT_EQ(a.dims(), b.dims()) << output_names[i];
    double max_err = 0;
    std::int64_t bad = 0;
    for (std::int64_t k = 0; k < a.element_count(); ++k) {
      const double x = a.element_as_double(k), y = b.element_as_double(k);
      const double err = std::fabs(x - y);
      max_err = std::max(max_err, err);
      if (!(err <= atol + rtol * std::fabs(y))) ++bad;
    }
    EXPECT_EQ(bad, 0) << model.filename() << " output '" << output_names[i] << "': " << bad
                      << " of " << a.element_count() << " elements out of tolerance, max |err| "
                      << max_err;
    std::cout << model.filename().string() << " " << output_names[i]
              << ": max |err| vs onnxruntime " << max_err << " (" << report.pass_changes.size()
              << " rewrites)\n";
  }
}

TEST(ModelsVsOnnxruntime, SileroVadV5WithCarriedState) {
  std::mt19937 rng(1);
  BuilderConfig config;
  config.fixed_inputs["sr"] = Tensor::scalar_i64(16000);
  OptimizationProfile profile;
  profile.inputs["input"] = ShapeRange{{1, 512}, {1, 512}, {1, 512}};
  config.profiles.push_back(profile);
  expect_matches_onnxruntime(third_party_model("silero_vad_v5.onnx"), config,
                             {{"input", random_f32({1, 512}, rng, 0.1f)},
                              {"state", random_f32({2, 1, 128}, rng, 0.5f)},
                              {"sr", Tensor::scalar_i64(16000), false}});
}

TEST(ModelsVsOnnxruntime, OpenWakeWordMelspectrogram) {
  std::mt19937 rng(2);
  // The input's dims are symbolic: without a profile the builder would time it at 1x1.
  BuilderConfig config;
  OptimizationProfile profile;
  profile.inputs["input"] = ShapeRange{{1, 1280}, {1, 1280}, {1, 1280}};
  config.profiles.push_back(profile);
  expect_matches_onnxruntime(third_party_model("melspectrogram.onnx"), config,
                             {{"input", random_f32({1, 1280}, rng, 3000.f)}}, 1e-4, 1e-4);
}

TEST(ModelsVsOnnxruntime, OpenWakeWordEmbedding) {
  std::mt19937 rng(3);
  expect_matches_onnxruntime(third_party_model("embedding_model.onnx"), {},
                             {{"input_1", random_f32({1, 76, 32, 1}, rng)}});
}

TEST(ModelsVsOnnxruntime, OpenWakeWordHeyJarvis) {
  std::mt19937 rng(4);
  expect_matches_onnxruntime(third_party_model("hey_jarvis_v0.1.onnx"), {},
                             {{"x.1", random_f32({1, 16, 96}, rng)}});
}

class TorchModels : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const fs::path out = binary_dir() / "tests/models/exported";
    fs::create_directories(out);
    const std::string cmd = "/usr/bin/python3 '" +
                            (source_dir() / "tests/models/export_test_models.py").string() + "' '" +
                            out.string() + "' > '" + (out / "export.log").string() + "' 2>&1";
    exported_ = std::system(cmd.c_str()) == 0;
  }
  static fs::path exported(const std::string& name) {
    return binary_dir() / "tests/models/exported" / name;
  }
  static inline bool exported_ = false;
};

TEST_F(TorchModels, SmallDs2) {
  ASSERT_TRUE(exported_)
      << "export failed: see tests/models/exported/export.log in the build folder";
  std::mt19937 rng(5);
  BuilderConfig config;
  config.profiles = {OptimizationProfile{
      "p", {{"x", ShapeRange{{1, 1, 40, 10}, {2, 1, 40, 60}, {4, 1, 40, 200}}}}}};
  expect_matches_onnxruntime(exported("small_ds2.onnx"), config,
                             {{"x", random_f32({2, 1, 40, 60}, rng)}});
}

TEST_F(TorchModels, SmallConformer) {
  ASSERT_TRUE(exported_)
      << "export failed: see tests/models/exported/export.log in the build folder";
  std::mt19937 rng(6);
  expect_matches_onnxruntime(exported("small_conformer.onnx"), {},
                             {{"x", random_f32({2, 37, 80}, rng)}});
}

}  // namespace
}  // namespace voxrt
