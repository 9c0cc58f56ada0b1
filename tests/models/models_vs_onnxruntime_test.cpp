// Whole models against the real onnxruntime (CPU), rtol 1e-4 / atol 1e-5, on random inputs:
// Silero VAD v5 with carried state, the openWakeWord chain (CC BY-NC-SA: fetched for tests
// only), and DS2-style and Conformer models exported from PyTorch at test time.
#include "ort_compare.h"

namespace voxrt {
namespace {
using namespace model_test;

fs::path third_party_model(const std::string& name) {
  return source_dir() / ".third_party/models" / name;
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
    exported_ = export_models("export_test_models.py", binary_dir() / "tests/models/exported");
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
