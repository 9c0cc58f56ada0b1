// Helpers of the model tests (label models): build an engine from an ONNX file, run voxrt and
// onnxruntime on the same inputs and compare every output within rtol / atol.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "ort/ort_bridge.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt::model_test {

namespace fs = std::filesystem;

inline fs::path source_dir() {
  return std::getenv("VOXRT_SOURCE_DIR") ? std::getenv("VOXRT_SOURCE_DIR") : ".";
}
inline fs::path binary_dir() {
  return std::getenv("VOXRT_BINARY_DIR") ? std::getenv("VOXRT_BINARY_DIR") : ".";
}

struct Input {
  std::string name;
  Tensor value;
  bool engine_takes_it = true;  // false: bound at build time (--fixed-input) in voxrt
};

inline Tensor random_f32(Dims dims, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> normal(0.f, scale);
  Tensor t = Tensor::uninitialized(DType::kF32, std::move(dims));
  for (auto& v : t.span<float>()) v = normal(rng);
  return t;
}

inline Tensor i64_tensor(Dims dims, const std::vector<std::int64_t>& values) {
  return Tensor::from_vector<std::int64_t>(std::move(dims), values);
}

// Builds `model` (no autotuning) into an engine; fails the test on an error.
inline std::shared_ptr<const Engine> build_engine(const fs::path& model, BuilderConfig config,
                                                  BuildReport* report = nullptr) {
  config.autotune = false;
  auto bytes = build_engine_from_onnx_file(model.string(), config, report);
  EXPECT_TRUE(bytes.has_value()) << bytes.status().to_string();
  if (!bytes) return nullptr;
  auto engine = Engine::load_bytes(std::move(*bytes));
  EXPECT_TRUE(engine.has_value()) << engine.status().to_string();
  return engine ? *engine : nullptr;
}

// The engine's inputs, in its order, from `inputs` by name.
inline std::vector<Tensor> engine_inputs(const Engine& engine, const std::vector<Input>& inputs) {
  std::vector<Tensor> ordered;
  for (const auto& info : engine.inputs()) {
    bool found = false;
    for (const auto& in : inputs) {
      if (in.name == info.name && in.engine_takes_it) {
        ordered.push_back(in.value);
        found = true;
      }
    }
    EXPECT_TRUE(found) << "the test gives no value for engine input '" << info.name << "'";
  }
  return ordered;
}

// |a - b| <= atol + rtol |b| everywhere; `what` names the output in the failure.
inline ::testing::AssertionResult all_close(const Tensor& a, const Tensor& b, double rtol,
                                            double atol, const std::string& what,
                                            double* max_err_out = nullptr) {
  if (a.dims() != b.dims()) {
    return ::testing::AssertionFailure()
           << what << ": dims " << dims_to_string(a.dims()) << " vs " << dims_to_string(b.dims());
  }
  double max_err = 0;
  std::int64_t bad = 0;
  for (std::int64_t k = 0; k < a.element_count(); ++k) {
    const double x = a.element_as_double(k), y = b.element_as_double(k);
    const double err = std::fabs(x - y);
    max_err = std::max(max_err, err);
    if (!(err <= atol + rtol * std::fabs(y))) ++bad;
  }
  if (max_err_out) *max_err_out = max_err;
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << what << ": " << bad << " of " << a.element_count()
                                       << " elements out of tolerance, max |err| " << max_err;
}

// One profile whose opt and max are the inputs' dims; min too, except that dim 0 may go down to
// `min_batch` (a test that also runs the streams of a batch one by one).
inline OptimizationProfile profile_of(const std::vector<Input>& inputs,
                                      std::int64_t min_batch = 0) {
  OptimizationProfile profile{"test", {}};
  for (const Input& in : inputs) {
    if (!in.engine_takes_it) continue;
    Dims min = in.value.dims();
    if (min_batch > 0 && !min.empty()) min[0] = min_batch;
    profile.inputs[in.name] = ShapeRange{min, in.value.dims(), in.value.dims()};
  }
  return profile;
}

// Builds the model, runs voxrt and onnxruntime on the same inputs, compares every output; voxrt's
// outputs go to `ours` when given (left empty on failure). Skips the test without onnxruntime.
inline void expect_matches_onnxruntime(const fs::path& model, BuilderConfig config,
                                       const std::vector<Input>& inputs, double rtol = 1e-4,
                                       double atol = 1e-5,
                                       std::vector<Tensor>* ours_out = nullptr) {
  if (!ort::onnxruntime_available())
    GTEST_SKIP() << "onnxruntime-node missing: run scripts/fetch-third-party.sh";
  ASSERT_TRUE(fs::exists(model)) << model << " is missing";
  // Without a profile the builder's profiling run would give every symbolic dim the size 1.
  if (config.profiles.empty()) config.profiles.push_back(profile_of(inputs));
  BuildReport report;
  auto engine = build_engine(model, std::move(config), &report);
  if (!engine) return;
  std::vector<std::string> names;
  std::vector<Tensor> ort_inputs;
  for (const auto& in : inputs) {
    names.push_back(in.name);
    ort_inputs.push_back(in.value);
  }
  std::vector<std::string> output_names;
  for (const auto& o : engine->outputs()) output_names.push_back(o.name);
  auto context = engine->create_context(1);
  ASSERT_TRUE(context.has_value());
  auto ours = (*context)->run(engine_inputs(*engine, inputs));
  ASSERT_TRUE(ours.has_value()) << ours.status().to_string();
  auto reference = ort::run_onnxruntime(model.string(), names, ort_inputs, output_names);
  ASSERT_TRUE(reference.has_value()) << reference.status().to_string();
  EXPECT_EQ(ours->size(), reference->outputs.size());
  for (std::size_t i = 0; i < ours->size() && i < reference->outputs.size(); ++i) {
    double max_err = 0;
    EXPECT_TRUE(all_close((*ours)[i], reference->outputs[i], rtol, atol,
                          model.filename().string() + " output '" + output_names[i] + "'",
                          &max_err));
    std::cout << model.filename().string() << " " << output_names[i]
              << ": max |err| vs onnxruntime " << max_err << " (" << report.pass_changes.size()
              << " rewrites)\n";
  }
  if (ours_out) *ours_out = std::move(*ours);
}

// Exports a set of models once per test suite with Debian's PyTorch (/usr/bin/python3).
inline bool export_models(const std::string& script, const fs::path& out) {
  fs::create_directories(out);
  const std::string cmd = "/usr/bin/python3 '" + (source_dir() / "tests/models" / script).string() +
                          "' '" + out.string() + "' > '" + (out / "export.log").string() + "' 2>&1";
  return std::system(cmd.c_str()) == 0;
}

}  // namespace voxrt::model_test
