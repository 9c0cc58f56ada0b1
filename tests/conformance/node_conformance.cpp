// ONNX's own backend node tests (Debian libonnx-testdata) through the whole voxrt pipeline:
// import, build for the CPU (profiles and profiling values from the test's real inputs), run
// every test_data_set_N and compare every output with output_K.pb (dtype and shape exactly,
// values NaN-aware within rtol/atol: ONNX's backend-test tolerances are rtol 1e-3, atol 1e-7).
//
// A test is "unsupported" when voxrt says so with StatusCode::kUnsupported (an op without an
// importer, a dtype outside voxrt's set, an attribute value voxrt refuses), "failed" on any other
// error or mismatch. Exit status 0 only when every failure is listed in the expected-failures file
// and every listed test still fails (so the list stays honest).
//
//   node_conformance [--data DIR] [--expected-failures FILE] [--report FILE] [--filter SUBSTR]
//                    [--rtol R] [--atol A] [--device cpu|cuda] [--precision P] [--verbose]
//
// --device cuda builds CUDA engines (the whole graph on the GPU, so a test with a node the CUDA
// backend has no kernel for is unsupported there) at --precision (default fp32); without a usable
// device it prints why and exits with kSkipExitCode, which ctest reports as skipped.
#include <onnx/onnx_pb.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#if VOXRT_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif
#include "builder/build_graph.h"
#include "onnx_import/importer.h"
#include "onnx_import/tensor_conversion.h"
#include "support/quoted_names.h"
#include "tensor_compare.h"  // tools/voxrt: what voxrt check compares with
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt {
namespace {

namespace fs = std::filesystem;

enum class Outcome { kPassed, kFailed, kUnsupported };

struct TestResult {
  std::string name;
  Outcome outcome = Outcome::kFailed;
  std::string reason;         // empty for passed
  std::set<std::string> ops;  // node op types of the model's main graph
};

// The ops issue 2 names: every test that uses only these must pass (checked by review of the
// expected-failures file, and printed by this program when one is unsupported).
const std::set<std::string>& core_ops() {
  static const std::set<std::string> ops = {
      "Conv", "BatchNormalization", "Gemm", "MatMul", "GRU", "LSTM", "RNN", "LayerNormalization",
      "Softmax", "LogSoftmax",
      // unary pointwise
      "Abs", "Neg", "Exp", "Log", "Sqrt", "Reciprocal", "Relu", "LeakyRelu", "Sigmoid", "Tanh",
      "Erf", "Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Clip", "Elu", "HardSigmoid",
      "Softplus", "Identity",
      // binary pointwise
      "Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "And", "Or", "Xor",
      // reductions
      "ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2",
      "ReduceSumSquare", "ArgMax",
      // data movement and shapes
      "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Transpose", "Reshape",
      "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather", "Pad", "Shape",
      "ConstantOfShape", "Range", "Expand", "Where", "Equal", "Less", "Greater", "LessOrEqual",
      "GreaterOrEqual", "Not", "Cast", "Constant"};
  return ops;
}

// The first line that says what is wrong ("node 'X' (Op, ...): why"), without the file path.
std::string short_reason(const std::string& message) {
  std::string text = message;
  const std::size_t listed = text.find(":\n  ");
  if (listed != std::string::npos) text = text.substr(listed + 4);
  const std::size_t newline = text.find('\n');
  if (newline != std::string::npos) text = text.substr(0, newline);
  const std::size_t model = text.find("model.onnx: ");
  if (model != std::string::npos) text = text.substr(model + 12);
  return text;
}

std::vector<std::string> data_set_dirs(const fs::path& test_dir) {
  std::vector<std::string> dirs;
  for (const auto& entry : fs::directory_iterator(test_dir)) {
    if (entry.is_directory() && entry.path().filename().string().starts_with("test_data_set_"))
      dirs.push_back(entry.path().string());
  }
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// input_K.pb / output_K.pb in K order. ONNX's test data stores bfloat16 tensors as UINT16 bits
// (numpy has no bfloat16); those become bf16 when the model's value is bf16.
Expected<std::vector<Tensor>> read_tensors(const std::string& dir, const std::string& prefix,
                                           const std::vector<int>& onnx_types) {
  std::vector<Tensor> tensors;
  for (std::size_t k = 0;; ++k) {
    const std::string path = dir + "/" + prefix + std::to_string(k) + ".pb";
    if (!fs::exists(path)) break;
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    onnx::TensorProto proto;
    if (!proto.ParseFromString(bytes.str())) return corrupt(path, ": not a TensorProto");
    if (k < onnx_types.size() && onnx_types[k] == onnx::TensorProto::BFLOAT16 &&
        proto.data_type() == onnx::TensorProto::UINT16) {
      proto.set_data_type(onnx::TensorProto::BFLOAT16);
    }
    VOXRT_ASSIGN_OR_RETURN(
        Tensor t, onnx_import::tensor_from_proto(proto, path, fs::path(path).parent_path()));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

int value_onnx_type(const onnx::ValueInfoProto& v) {
  return v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0;
}

constexpr int kSkipExitCode = 77;

struct Options {
  std::string data_dir = "/usr/share/libonnx-testdata/data/node";
  DeviceKind device = DeviceKind::kCpu;
  Precision precision = Precision::kFp32;
  std::string expected_failures;
  std::string report;
  std::string filter;
  double rtol = 1e-3;
  double atol = 1e-7;
  bool verbose = false;
};

TestResult run_test(const fs::path& test_dir, const Options& options) {
  TestResult result;
  result.name = test_dir.filename().string();
  const std::string model_path = (test_dir / "model.onnx").string();
  auto fail = [&](Outcome outcome, std::string reason) {
    result.outcome = outcome;
    result.reason = std::move(reason);
    return result;
  };
  auto from_status = [&](const Status& status, const std::string& stage) {
    return fail(
        status.code() == StatusCode::kUnsupported ? Outcome::kUnsupported : Outcome::kFailed,
        stage + ": " + short_reason(status.message()));
  };

  onnx::ModelProto model;
  {
    std::ifstream in(model_path, std::ios::binary);
    if (!model.ParseFromIstream(&in)) return fail(Outcome::kFailed, "model.onnx does not parse");
  }
  std::vector<int> input_types;
  std::vector<int> output_types;
  std::set<std::string> initializer_names;
  for (const auto& init : model.graph().initializer()) initializer_names.insert(init.name());
  for (const auto& v : model.graph().input()) {
    if (!initializer_names.count(v.name())) input_types.push_back(value_onnx_type(v));
  }
  for (const auto& v : model.graph().output()) output_types.push_back(value_onnx_type(v));
  for (const auto& node : model.graph().node()) {
    const std::string domain = node.domain().empty() ? "" : node.domain() + ".";
    result.ops.insert(domain == "ai.onnx." ? node.op_type() : domain + node.op_type());
  }

  auto graph = onnx_import::import_model_file(model_path);
  if (!graph) return from_status(graph.status(), "import");

  std::vector<std::vector<Tensor>> inputs;
  std::vector<std::vector<Tensor>> expected;
  for (const std::string& dir : data_set_dirs(test_dir)) {
    auto in = read_tensors(dir, "input_", input_types);
    if (!in) return from_status(in.status(), "read inputs");
    auto out = read_tensors(dir, "output_", output_types);
    if (!out) return from_status(out.status(), "read outputs");
    inputs.push_back(std::move(*in));
    expected.push_back(std::move(*out));
  }
  if (inputs.empty()) return fail(Outcome::kFailed, "no test_data_set_N folder");

  // One profile covering every data set's shapes; the profiling run uses data set 0.
  BuilderConfig config;
  config.autotune = false;
  config.device = options.device;
  config.precision = options.precision;
  const auto& graph_inputs = (*graph)->inputs;
  if (graph_inputs.size() != inputs[0].size()) {
    return fail(Outcome::kFailed, str_cat("the model has ", graph_inputs.size(),
                                          " inputs, the test data ", inputs[0].size()));
  }
  OptimizationProfile profile;
  profile.name = "test_data";
  for (std::size_t i = 0; i < graph_inputs.size(); ++i) {
    ShapeRange range{inputs[0][i].dims(), inputs[0][i].dims(), inputs[0][i].dims()};
    for (const auto& set : inputs) {
      const Dims& dims = set[i].dims();
      if (dims.size() != range.min.size())
        return fail(Outcome::kFailed, "data sets give input " + std::to_string(i) + " two ranks");
      for (std::size_t d = 0; d < dims.size(); ++d) {
        range.min[d] = std::min(range.min[d], dims[d]);
        range.max[d] = std::max(range.max[d], dims[d]);
      }
    }
    profile.inputs[graph_inputs[i]->name] = range;
    config.profiling_values[graph_inputs[i]->name] = inputs[0][i].clone();
  }
  config.profiles.push_back(std::move(profile));

  auto bytes = builder::build_engine_from_graph(std::move(*graph), 0, config);
  if (!bytes) return from_status(bytes.status(), "build");
  auto engine = Engine::load_bytes(std::move(*bytes));
  if (!engine) return from_status(engine.status(), "load");
  auto context = (*engine)->create_context(1);
  if (!context) return from_status(context.status(), "context");

  for (std::size_t s = 0; s < inputs.size(); ++s) {
    auto outputs = (*context)->run(inputs[s]);
    if (!outputs) return from_status(outputs.status(), str_cat("run data set ", s));
    if (outputs->size() != expected[s].size()) {
      return fail(Outcome::kFailed, str_cat("data set ", s, ": ", outputs->size(),
                                            " outputs, expected ", expected[s].size()));
    }
    for (std::size_t k = 0; k < outputs->size(); ++k) {
      const Tensor& actual = (*outputs)[k];
      const Tensor& want = expected[s][k];
      const cli::Comparison c = cli::compare_tensors(actual, want, options.rtol, options.atol);
      if (c.within_tolerance) continue;
      std::string detail =
          c.shapes_match
              ? c.describe()
              : str_cat("got ", dtype_name(actual.dtype()), " ", dims_to_string(actual.dims()),
                        ", expected ", dtype_name(want.dtype()), " ", dims_to_string(want.dims()));
      return fail(Outcome::kFailed, str_cat("data set ", s, " output ", k, " ('",
                                            (*engine)->outputs()[k].name, "'): ", detail));
    }
  }
  result.outcome = Outcome::kPassed;
  return result;
}

// "test_name  reason" per line; '#' starts a comment. Every entry needs a reason.
Expected<std::map<std::string, std::string>> read_expected_failures(const std::string& path) {
  std::map<std::string, std::string> entries;
  if (path.empty()) return entries;
  std::ifstream in(path);
  if (!in) return not_found("expected-failures file '", path, "' cannot be opened");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::size_t begin = line.find_first_not_of(" \t");
    if (begin == std::string::npos || line[begin] == '#') continue;
    const std::size_t end = line.find_first_of(" \t", begin);
    const std::string name = line.substr(begin, end == std::string::npos ? end : end - begin);
    const std::size_t reason = end == std::string::npos ? end : line.find_first_not_of(" \t", end);
    if (reason == std::string::npos) {
      return invalid_argument(path, ":", number, ": '", name, "' has no reason");
    }
    if (!entries.emplace(name, line.substr(reason)).second)
      return invalid_argument(path, ":", number, ": '", name, "' is listed twice");
  }
  return entries;
}

int run(const Options& options) {
  auto expected_failures = read_expected_failures(options.expected_failures);
  if (!expected_failures) {
    std::cerr << "error: " << expected_failures.status().message() << "\n";
    return 2;
  }
  std::vector<fs::path> tests;
  for (const auto& entry : fs::directory_iterator(options.data_dir)) {
    if (fs::exists(entry.path() / "model.onnx") &&
        entry.path().filename().string().find(options.filter) != std::string::npos)
      tests.push_back(entry.path());
  }
  std::sort(tests.begin(), tests.end());
  if (tests.empty()) {
    std::cerr << "error: no tests in " << options.data_dir << "\n";
    return 2;
  }

  std::vector<TestResult> results;
  for (const fs::path& test : tests) {
    results.push_back(run_test(test, options));
    if (options.verbose) {
      const TestResult& r = results.back();
      std::printf("%-60s %s %s\n", r.name.c_str(),
                  r.outcome == Outcome::kPassed   ? "passed"
                  : r.outcome == Outcome::kFailed ? "FAILED"
                                                  : "unsupported",
                  r.reason.c_str());
      std::fflush(stdout);
    }
  }

  struct Counts {
    int passed = 0, failed = 0, unsupported = 0;
  };
  Counts total;
  std::map<std::string, Counts> by_op;
  std::map<std::string, int> unsupported_reasons;
  std::vector<const TestResult*> unexpected_failures, expected_and_failed, core_unsupported;
  std::set<std::string> seen;
  std::vector<std::string> unexpected_passes, stale_entries;
  for (const TestResult& r : results) {
    seen.insert(r.name);
    const bool listed = expected_failures->count(r.name) > 0;
    for (const std::string& op : r.ops) {
      Counts& c = by_op[op];
      (r.outcome == Outcome::kPassed   ? c.passed
       : r.outcome == Outcome::kFailed ? c.failed
                                       : c.unsupported)++;
    }
    switch (r.outcome) {
      case Outcome::kPassed:
        ++total.passed;
        if (listed) unexpected_passes.push_back(r.name);
        break;
      case Outcome::kFailed:
        ++total.failed;
        (listed ? expected_and_failed : unexpected_failures).push_back(&r);
        break;
      case Outcome::kUnsupported: {
        ++total.unsupported;
        if (listed) stale_entries.push_back(r.name + " (unsupported, not failing)");
        ++unsupported_reasons[test::without_quoted_names(r.reason)];
        const bool core = std::all_of(r.ops.begin(), r.ops.end(),
                                      [](const std::string& op) { return core_ops().count(op); });
        if (core) core_unsupported.push_back(&r);
        break;
      }
    }
  }
  if (options.filter.empty()) {
    for (const auto& [name, reason] : *expected_failures) {
      if (!seen.count(name)) stale_entries.push_back(name + " (no such test)");
    }
  }

  std::printf("\nper op (a test counts once for each op its model uses):\n");
  std::printf("  %-36s %6s %6s %6s %11s\n", "op", "tests", "passed", "failed", "unsupported");
  for (const auto& [op, c] : by_op) {
    std::printf("  %-36s %6d %6d %6d %11d\n", op.c_str(), c.passed + c.failed + c.unsupported,
                c.passed, c.failed, c.unsupported);
  }
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& [reason, count] : unsupported_reasons) ranked.emplace_back(-count, reason);
  std::sort(ranked.begin(), ranked.end());
  std::printf("\nunsupported, by reason:\n");
  for (const auto& [count, reason] : ranked) std::printf("  %4d  %s\n", -count, reason.c_str());
  if (!core_unsupported.empty()) {
    std::printf(
        "\nunsupported tests that use only the core ops of issue 2 (out of scope: dtypes "
        "or modes voxrt does not have):\n");
    for (const TestResult* r : core_unsupported)
      std::printf("  %s: %s\n", r->name.c_str(), r->reason.c_str());
  }
  if (!expected_and_failed.empty()) {
    std::printf("\nexpected failures (%s):\n", options.expected_failures.c_str());
    for (const TestResult* r : expected_and_failed) {
      std::printf("  %s: %s\n    listed because: %s\n", r->name.c_str(), r->reason.c_str(),
                  expected_failures->at(r->name).c_str());
    }
  }
  for (const TestResult* r : unexpected_failures)
    std::printf("FAILED %s: %s\n", r->name.c_str(), r->reason.c_str());
  for (const std::string& name : unexpected_passes) {
    std::printf("UNEXPECTED PASS %s: listed in %s; remove the entry\n", name.c_str(),
                options.expected_failures.c_str());
  }
  for (const std::string& entry : stale_entries)
    std::printf("STALE ENTRY %s in %s\n", entry.c_str(), options.expected_failures.c_str());

  if (!options.report.empty()) {
    std::ofstream report(options.report);
    for (const TestResult& r : results) {
      std::string ops;
      for (const std::string& op : r.ops) ops += (ops.empty() ? "" : ",") + op;
      report << r.name << "\t"
             << (r.outcome == Outcome::kPassed   ? "passed"
                 : r.outcome == Outcome::kFailed ? "failed"
                                                 : "unsupported")
             << "\t" << ops << "\t" << r.reason << "\n";
    }
  }
  std::printf(
      "\nONNX node tests (%s, %s %s, rtol %g, atol %g): passed %d, failed %d, unsupported %d\n",
      options.data_dir.c_str(), options.device == DeviceKind::kCuda ? "cuda" : "cpu",
      std::string(precision_name(options.precision)).c_str(), options.rtol, options.atol,
      total.passed, total.failed, total.unsupported);
  std::printf(
      "failures: %zu listed in the expected-failures file, %zu not listed; %zu listed "
      "entries pass, %zu are stale\n",
      expected_and_failed.size(), unexpected_failures.size(), unexpected_passes.size(),
      stale_entries.size());
  const bool ok = unexpected_failures.empty() && unexpected_passes.empty() && stale_entries.empty();
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace voxrt

int main(int argc, char** argv) {
  voxrt::Options options;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "error: " << arg << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--data") {
      options.data_dir = value();
    } else if (arg == "--expected-failures") {
      options.expected_failures = value();
    } else if (arg == "--report") {
      options.report = value();
    } else if (arg == "--filter") {
      options.filter = value();
    } else if (arg == "--rtol") {
      options.rtol = std::stod(value());
    } else if (arg == "--atol") {
      options.atol = std::stod(value());
    } else if (arg == "--verbose") {
      options.verbose = true;
    } else if (arg == "--device") {
      const std::string device = value();
      if (device != "cpu" && device != "cuda") {
        std::cerr << "error: --device '" << device << "': expected cpu or cuda\n";
        return 2;
      }
      options.device = device == "cuda" ? voxrt::DeviceKind::kCuda : voxrt::DeviceKind::kCpu;
    } else if (arg == "--precision") {
      auto precision = voxrt::precision_from_name(value());
      if (!precision) {
        std::cerr << "error: " << precision.status().message() << "\n";
        return 2;
      }
      options.precision = *precision;
    } else {
      std::cerr << "usage: node_conformance [--data DIR] [--expected-failures FILE] [--report "
                   "FILE] [--filter SUBSTR] [--rtol R] [--atol A] [--device cpu|cuda] "
                   "[--precision P] [--verbose]\n";
      return arg == "--help" ? 0 : 2;
    }
  }
  if (options.device == voxrt::DeviceKind::kCuda) {
#if VOXRT_HAVE_CUDA
    std::string why;
    if (!voxrt::backends::cuda::cuda_device_available(&why)) {
      std::cout << "node_conformance --device cuda: " << why << " (skipped)\n";
      return voxrt::kSkipExitCode;
    }
    voxrt::backends::cuda::register_cuda_backend();
#else
    std::cout << "node_conformance --device cuda: built without the CUDA backend (skipped)\n";
    return voxrt::kSkipExitCode;
#endif
  }
  return voxrt::run(options);
}
