// bench/cpu/ort_dynamic_quantize.py, our re-implementation of onnxruntime's dynamic quantization
// format (the "onnxruntime INT8" column of bench/cpu/int8.sh): onnxruntime must run what it
// writes, the MatMul form must give what its definition gives (numpy, on the same rounded
// values: ort_quantize_models.py), and every form must differ from its FP32 model by a
// quantization error: more than nothing (a real quantized model) and less than a few percent.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "models/ort_compare.h"
#include "onnx_import/importer.h"

namespace voxrt::model_test {
namespace {

class OrtDynamicQuantize : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { made_ = export_models("ort_quantize_models.py", dir()); }
  void SetUp() override {
    if (!ort::onnxruntime_available())
      GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
    ASSERT_TRUE(made_) << "ort_quantize_models.py failed: see " << (dir() / "export.log");
  }
  static fs::path dir() { return binary_dir() / "tests/models/ort_quantize"; }

  static Tensor read(const std::string& file) {
    auto t = onnx_import::read_tensor_proto_file((dir() / file).string());
    EXPECT_TRUE(t.has_value()) << file << ": " << t.status().to_string();
    return t ? *t : Tensor();
  }
  static Tensor run(const std::string& model, const Tensor& x) {
    auto result = ort::run_onnxruntime((dir() / model).string(), {"x"}, {x}, {"y"});
    EXPECT_TRUE(result.has_value()) << model << ": " << result.status().to_string();
    return result ? result->outputs.at(0) : Tensor();
  }
  // sqrt(sum (a - b)^2 / sum b^2)
  static double relative_rms(const Tensor& a, const Tensor& b) {
    double num = 0, den = 0;
    for (std::int64_t i = 0; i < b.element_count(); ++i) {
      const double d = a.data<float>()[i] - b.data<float>()[i];
      num += d * d;
      den += double{b.data<float>()[i]} * b.data<float>()[i];
    }
    return std::sqrt(num / den);
  }
  // The quantized form against the FP32 model: a quantization error, neither zero nor large.
  static void expect_quantized(const std::string& name, double max_error) {
    const Tensor x = read(name + "_x.pb");
    const Tensor fp32 = run(name + ".onnx", x);
    const Tensor int8 = run(name + "_int8.onnx", x);
    ASSERT_TRUE(fp32.is_valid() && int8.is_valid());
    ASSERT_EQ(fp32.dims(), int8.dims()) << name;
    const double error = relative_rms(int8, fp32);
    EXPECT_GT(error, 1e-4) << name << ": the INT8 form gives the FP32 results: nothing quantized?";
    EXPECT_LT(error, max_error) << name;
  }

  static inline bool made_ = false;
};

TEST_F(OrtDynamicQuantize, MatMulGivesWhatItsDefinitionGives) {
  const Tensor x = read("matmul_x.pb");
  const Tensor expected = read("matmul_expected_int8.pb");
  const Tensor got = run("matmul_int8.onnx", x);
  ASSERT_TRUE(expected.is_valid() && got.is_valid());
  EXPECT_TRUE(all_close(got, expected, 1e-5, 1e-5, "matmul_int8.onnx vs numpy"));
  expect_quantized("matmul", 0.02);
}

TEST_F(OrtDynamicQuantize, ConvAndLstmAreQuantizedNotBroken) {
  expect_quantized("conv", 0.03);
  expect_quantized("lstm", 0.03);
}

}  // namespace
}  // namespace voxrt::model_test
