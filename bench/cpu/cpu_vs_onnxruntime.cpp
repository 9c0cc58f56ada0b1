// Times a voxrt engine and onnxruntime on the same ONNX model, inputs and thread count, in
// interleaved rounds (voxrt block, onnxruntime block, ...), and prints both medians and their
// ratio. Outputs are compared first, so a fast wrong engine cannot look good. Besides wall-clock
// latency it records each side's process CPU time per run (every thread): on cores shared with
// other work a run's latency includes the time others held the core, its CPU time does not.
// With --ort-quantized Q.onnx a second onnxruntime session runs Q.onnx (the same model quantized,
// bench/cpu/ort_dynamic_quantize.py) in the same rounds; its outputs are compared with
// onnxruntime's FP32 ones, so a "quantized" file that is not one shows a zero difference.
//
//   cpu_vs_onnxruntime --onnx M.onnx --engine M.engine --shapes x:1x1x161x200
//       [--ort-input sr=16000] [--fill processed_lens=64] [--threads 1] [--rounds 5]
//       [--iterations 20] [--ort-quantized Q.onnx] [--json]
// Float inputs are random (normal, sigma 0.5); integer inputs are zero unless --fill sets them.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "ort/ort_bridge.h"
#include "voxrt/engine.h"

namespace {

using voxrt::Dims;
using voxrt::DType;
using voxrt::Tensor;

Dims parse_dims(const std::string& s) {
  Dims d;
  std::size_t pos = 0;
  while (pos < s.size()) {
    auto x = s.find('x', pos);
    d.push_back(std::stoll(s.substr(pos, x == std::string::npos ? std::string::npos : x - pos)));
    if (x == std::string::npos) break;
    pos = x + 1;
  }
  return d;
}

double process_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"voxrt CPU engine vs onnxruntime, interleaved"};
  std::string onnx, engine_path, ort_quantized;
  std::vector<std::string> shapes, ort_inputs, fills;
  int threads = 1, rounds = 5, iterations = 20;
  bool json = false;
  app.add_option("--onnx", onnx)->required();
  app.add_option("--engine", engine_path)->required();
  app.add_option("--shapes", shapes, "NAME:DIMS for every engine input");
  app.add_option(
      "--ort-input", ort_inputs,
      "NAME=INT scalar i64 inputs only onnxruntime takes (bound at build time in voxrt)");
  app.add_option("--fill", fills, "NAME=INT: every element of integer input NAME (default 0)");
  app.add_option("--threads", threads);
  app.add_option("--rounds", rounds);
  app.add_option("--iterations", iterations);
  app.add_option("--ort-quantized", ort_quantized,
                 "a quantized form of the model for a second onnxruntime session, timed alike");
  app.add_flag("--json", json);
  CLI11_PARSE(app, argc, argv);

  auto engine = voxrt::Engine::load_file(engine_path);
  if (!engine) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  std::map<std::string, Dims> shape_of;
  for (const auto& s : shapes)
    shape_of[s.substr(0, s.rfind(':'))] = parse_dims(s.substr(s.rfind(':') + 1));
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.f, 0.5f);
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  for (const auto& info : (*engine)->inputs()) {
    Dims dims;
    if (shape_of.count(info.name)) {
      dims = shape_of[info.name];
    } else {
      for (auto d : info.dims) dims.push_back(d < 0 ? 1 : d);
    }
    Tensor t = Tensor::zeros(info.dtype, dims);
    if (info.dtype == DType::kF32) {
      for (auto& v : t.span<float>()) v = normal(rng);
    }
    for (const auto& fill : fills) {
      if (fill.substr(0, fill.find('=')) != info.name) continue;
      const std::int64_t value = std::stoll(fill.substr(fill.find('=') + 1));
      if (info.dtype == DType::kI64) {
        for (auto& v : t.span<std::int64_t>()) v = value;
      } else if (info.dtype == DType::kI32) {
        for (auto& v : t.span<std::int32_t>()) v = static_cast<std::int32_t>(value);
      }
    }
    inputs.push_back(t);
    names.push_back(info.name);
  }
  std::vector<Tensor> ort_feed = inputs;
  std::vector<std::string> ort_names = names;
  for (const auto& s : ort_inputs) {
    ort_names.push_back(s.substr(0, s.find('=')));
    ort_feed.push_back(Tensor::scalar_i64(std::stoll(s.substr(s.find('=') + 1))));
  }
  std::vector<std::string> output_names;
  for (const auto& o : (*engine)->outputs()) output_names.push_back(o.name);

  auto context = (*engine)->create_context(threads);
  auto ours = (*context)->run(inputs);
  if (!ours) {
    std::cerr << "error: voxrt: " << ours.status().message() << "\n";
    return 1;
  }
  voxrt::ort::OrtRunOptions reference_options;
  reference_options.threads = threads;
  auto reference =
      voxrt::ort::run_onnxruntime(onnx, ort_names, ort_feed, output_names, reference_options);
  if (!reference) {
    std::cerr << "error: onnxruntime: " << reference.status().message() << "\n";
    return 1;
  }
  double max_abs = 0;
  double largest_reference = 0;  // what the differences are to be read against
  nlohmann::json by_output = nlohmann::json::object(),
                 quantized_by_output = nlohmann::json::object();
  for (std::size_t i = 0; i < ours->size(); ++i) {
    const Tensor& a = (*ours)[i];
    const Tensor& b = reference->outputs[i];
    if (a.dims() != b.dims()) {
      std::cerr << "error: output '" << output_names[i] << "' shape differs from onnxruntime\n";
      return 1;
    }
    double output_max = 0;
    for (std::int64_t k = 0; k < a.element_count(); ++k) {
      output_max = std::max(output_max, std::fabs(a.element_as_double(k) - b.element_as_double(k)));
      largest_reference = std::max(largest_reference, std::fabs(b.element_as_double(k)));
    }
    max_abs = std::max(max_abs, output_max);
    by_output[output_names[i]] = output_max;
  }

  // The quantized file's outputs against onnxruntime's FP32 ones.
  double quantized_max_abs = 0;
  if (!ort_quantized.empty()) {
    auto quantized = voxrt::ort::run_onnxruntime(ort_quantized, ort_names, ort_feed, output_names,
                                                 reference_options);
    if (!quantized) {
      std::cerr << "error: onnxruntime on " << ort_quantized << ": " << quantized.status().message()
                << "\n";
      return 1;
    }
    for (std::size_t i = 0; i < quantized->outputs.size(); ++i) {
      const Tensor& a = quantized->outputs[i];
      const Tensor& b = reference->outputs[i];
      if (a.dims() != b.dims()) {
        std::cerr << "error: output '" << output_names[i] << "' of " << ort_quantized
                  << " has another shape than the FP32 model's\n";
        return 1;
      }
      double output_max = 0;
      for (std::int64_t k = 0; k < a.element_count(); ++k) {
        output_max =
            std::max(output_max, std::fabs(a.element_as_double(k) - b.element_as_double(k)));
      }
      quantized_max_abs = std::max(quantized_max_abs, output_max);
      quantized_by_output[output_names[i]] = output_max;
    }
  }

  std::vector<double> voxrt_ms, ort_ms, voxrt_cpu_ms, ort_cpu_ms, quantized_ms, quantized_cpu_ms;
  for (int r = 0; r < rounds; ++r) {
    for (int i = 0; i < iterations; ++i) {
      const double c0 = process_cpu_ms();
      const auto t0 = std::chrono::steady_clock::now();
      auto out = (*context)->run(inputs);
      voxrt_ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      voxrt_cpu_ms.push_back(process_cpu_ms() - c0);
      if (!out) return 1;
    }
    voxrt::ort::OrtRunOptions timed = reference_options;
    timed.timed_iterations = iterations;
    auto block = voxrt::ort::run_onnxruntime(onnx, ort_names, ort_feed, output_names, timed);
    if (!block) {
      std::cerr << "error: onnxruntime: " << block.status().message() << "\n";
      return 1;
    }
    ort_ms.insert(ort_ms.end(), block->times_ms.begin(), block->times_ms.end());
    ort_cpu_ms.insert(ort_cpu_ms.end(), block->cpu_times_ms.begin(), block->cpu_times_ms.end());
    if (ort_quantized.empty()) continue;
    auto quantized_block =
        voxrt::ort::run_onnxruntime(ort_quantized, ort_names, ort_feed, output_names, timed);
    if (!quantized_block) {
      std::cerr << "error: onnxruntime on " << ort_quantized << ": "
                << quantized_block.status().message() << "\n";
      return 1;
    }
    quantized_ms.insert(quantized_ms.end(), quantized_block->times_ms.begin(),
                        quantized_block->times_ms.end());
    quantized_cpu_ms.insert(quantized_cpu_ms.end(), quantized_block->cpu_times_ms.begin(),
                            quantized_block->cpu_times_ms.end());
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const double ours_median = median(voxrt_ms), ort_median = median(ort_ms);
  nlohmann::json j = {
      {"model", onnx},
      {"engine", engine_path},
      {"threads", threads},
      {"voxrt_median_ms", ours_median},
      {"onnxruntime_median_ms", ort_median},
      {"speedup", ort_median / ours_median},
      {"voxrt_min_ms", *std::min_element(voxrt_ms.begin(), voxrt_ms.end())},
      {"onnxruntime_min_ms", *std::min_element(ort_ms.begin(), ort_ms.end())},
      {"voxrt_cpu_median_ms", median(voxrt_cpu_ms)},
      {"onnxruntime_cpu_median_ms", ort_cpu_ms.empty() ? -1.0 : median(ort_cpu_ms)},
      {"cpu_time_ratio", ort_cpu_ms.empty() ? -1.0 : median(ort_cpu_ms) / median(voxrt_cpu_ms)},
      {"max_abs_diff_vs_onnxruntime", max_abs},
      {"onnxruntime_max_abs_output", largest_reference},
      {"max_abs_diff_by_output", by_output},
      {"voxrt_peak_rss_mib", static_cast<double>(usage.ru_maxrss) / 1024.0},
      {"samples_each", voxrt_ms.size()}};
  if (!ort_quantized.empty()) {
    const double quantized_median = median(quantized_ms);
    j["onnxruntime_quantized_model"] = ort_quantized;
    j["onnxruntime_quantized_median_ms"] = quantized_median;
    j["onnxruntime_quantized_cpu_median_ms"] =
        quantized_cpu_ms.empty() ? -1.0 : median(quantized_cpu_ms);
    j["speedup_vs_onnxruntime_quantized"] = quantized_median / ours_median;
    j["onnxruntime_quantized_max_abs_diff_vs_fp32"] = quantized_max_abs;
    j["onnxruntime_quantized_max_abs_diff_by_output"] = quantized_by_output;
  }
  if (json) {
    std::cout << j.dump() << "\n";
  } else {
    std::cout << onnx << " (" << engine_path << ") threads=" << threads << ": voxrt " << ours_median
              << " ms, onnxruntime " << ort_median << " ms, speedup " << ort_median / ours_median
              << "x (max |diff| " << max_abs << ")";
    if (!ort_quantized.empty()) {
      std::cout << "; onnxruntime on " << ort_quantized << " " << median(quantized_ms)
                << " ms (max |diff| from its FP32 " << quantized_max_abs << ")";
    }
    std::cout << "\n";
  }
  return 0;
}
