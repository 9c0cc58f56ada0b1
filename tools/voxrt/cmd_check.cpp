// voxrt check: build an ONNX model, run it, and compare every output with a reference: the
// expected outputs of a test_data_set folder, or onnxruntime when the folder has none.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "onnx_import/importer.h"
#include "onnx_import/mark_all_outputs.h"
#include "ort/ort_bridge.h"
#include "tensor_compare.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt::cli {
namespace {

struct CheckArgs {
  std::string onnx_path;
  std::string data_dir;
  double rtol = 1e-4;
  double atol = 1e-5;
  bool autotune = false;
  bool json = false;
  bool mark_all = false;
  std::string precision = "fp32";
  std::vector<std::string> fixed_inputs;
};

// The model that is built and given to onnxruntime: the original, or with --mark-all a copy whose
// every intermediate tensor is an output. The copy is written beside the original when the weights
// are external files (both readers resolve them relative to the model), else to /tmp; it is
// removed when this object goes.
class CheckedModel {
 public:
  static Expected<CheckedModel> prepare(const CheckArgs& args) {
    CheckedModel model;
    model.path_ = args.onnx_path;
    if (!args.mark_all) return model;
    std::ifstream file(args.onnx_path, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());
    if (!file && !file.eof()) return io_error("cannot read '", args.onnx_path, "'");
    auto marked = onnx_import::mark_all_outputs(bytes);
    if (!marked) return marked.status();
    namespace fs = std::filesystem;
    const fs::path original(args.onnx_path);
    const fs::path folder = marked->has_external_data ? original.parent_path() : fs::path("/tmp");
    model.path_ =
        (folder / str_cat(".voxrt-markall-", ::getpid(), "-", original.filename().string()))
            .string();
    std::ofstream out(model.path_, std::ios::binary);
    out.write(marked->model_bytes.data(), static_cast<std::streamsize>(marked->model_bytes.size()));
    if (!out) {
      return io_error("cannot write the marked copy '", model.path_,
                      "' (with external weights it must sit beside the original)");
    }
    model.temporary_ = true;
    model.node_order_ = std::move(marked->outputs);
    return model;
  }
  CheckedModel() = default;
  CheckedModel(CheckedModel&& other) noexcept { *this = std::move(other); }
  CheckedModel& operator=(CheckedModel&& other) noexcept {
    std::swap(path_, other.path_);
    std::swap(temporary_, other.temporary_);
    std::swap(node_order_, other.node_order_);
    return *this;
  }
  ~CheckedModel() {
    if (temporary_) {
      std::error_code ignored;
      std::filesystem::remove(path_, ignored);
    }
  }
  const std::string& path() const { return path_; }
  // Output names in the order their nodes run (empty without --mark-all).
  const std::vector<std::string>& node_order() const { return node_order_; }

 private:
  std::string path_;
  bool temporary_ = false;
  std::vector<std::string> node_order_;
};

// Output indices in the order to report: node order with --mark-all (so the first FAIL is the
// first layer that diverges), else the engine's order.
std::vector<std::size_t> report_order(const Engine& engine, const CheckedModel& model) {
  std::vector<std::size_t> order;
  const auto& outputs = engine.outputs();
  for (const std::string& name : model.node_order()) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (outputs[i].name == name) order.push_back(i);
    }
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (std::find(order.begin(), order.end(), i) == order.end()) order.push_back(i);
  }
  return order;
}

int run_check(const CheckArgs& args) {
  // The inputs come first: their shapes are the build's profile (min = opt = max), so models
  // with symbolic dims build exactly for the data at hand, and integer inputs that decide shapes
  // get their real values in the profiling run.
  std::vector<Tensor> inputs;
  OptimizationProfile data_profile;
  data_profile.name = "data";
  std::map<std::string, Tensor> profiling_values;
  for (std::size_t i = 0; std::filesystem::exists(str_cat(args.data_dir, "/input_", i, ".pb"));
       ++i) {
    std::string name;
    auto t =
        onnx_import::read_tensor_proto_file(str_cat(args.data_dir, "/input_", i, ".pb"), &name);
    if (!t) {
      std::cerr << "error: input " << i << ": " << t.status().message() << "\n";
      return 1;
    }
    inputs.push_back(std::move(*t));
    if (!name.empty()) {
      data_profile.inputs[name] = {inputs.back().dims(), inputs.back().dims(),
                                   inputs.back().dims()};
      profiling_values[name] = inputs.back().clone();
    }
  }
  BuilderConfig config;
  config.autotune = args.autotune;
  auto precision = precision_from_name(args.precision);
  if (!precision) {
    std::cerr << "error: --precision: " << precision.status().message() << "\n";
    return 1;
  }
  config.precision = *precision;
  if (Status valid = config.validate(); !valid.is_ok()) {
    std::cerr << "error: " << valid.message() << "\n";
    return 1;
  }
  if (!data_profile.inputs.empty()) config.profiles.push_back(data_profile);
  config.profiling_values = std::move(profiling_values);
  auto model = CheckedModel::prepare(args);
  if (!model) {
    std::cerr << "error: --mark-all: " << model.status().message() << "\n";
    return 1;
  }
  auto built = build_engine_from_onnx_file(model->path(), config);
  if (!built) {
    std::cerr << "error: build: " << built.status().message() << "\n";
    return 1;
  }
  auto engine = Engine::load_bytes(std::move(*built));
  if (!engine) {
    std::cerr << "error: load: " << engine.status().message() << "\n";
    return 1;
  }
  const auto& infos = (*engine)->inputs();
  if (infos.size() != inputs.size()) {
    std::cerr << "error: " << args.data_dir << " holds " << inputs.size()
              << " input_K.pb file(s); the model has " << infos.size() << " input(s)\n";
    return 1;
  }
  std::vector<Tensor> expected;
  std::string reference = "test data";
  for (std::size_t i = 0; i < (*engine)->outputs().size(); ++i) {
    const std::string path = str_cat(args.data_dir, "/output_", i, ".pb");
    // Expected outputs cover the model's own outputs; intermediates marked by --mark-all are
    // compared with onnxruntime instead.
    if (args.mark_all || !std::filesystem::exists(path)) break;
    auto t = onnx_import::read_tensor_proto_file(path);
    if (!t) {
      std::cerr << "error: expected output " << i << ": " << t.status().message() << "\n";
      return 1;
    }
    expected.push_back(std::move(*t));
  }
  if (expected.empty()) {
    std::vector<std::string> names;
    for (const auto& info : infos) names.push_back(info.name);
    std::vector<std::string> output_names;
    for (const auto& info : (*engine)->outputs()) output_names.push_back(info.name);
    auto ort_result = ort::run_onnxruntime(model->path(), names, inputs, output_names);
    if (!ort_result) {
      std::cerr << "error: no output_K.pb in " << args.data_dir
                << " and onnxruntime failed: " << ort_result.status().message() << "\n";
      return 1;
    }
    expected = std::move(ort_result->outputs);
    reference = "onnxruntime";
  }
  auto context = (*engine)->create_context(1);
  if (!context) {
    std::cerr << "error: " << context.status().message() << "\n";
    return 1;
  }
  auto outputs = (*context)->run(inputs);
  if (!outputs) {
    std::cerr << "error: run: " << outputs.status().message() << "\n";
    return 1;
  }
  bool all_ok = expected.size() == outputs->size();
  nlohmann::json results = nlohmann::json::array();
  std::string first_failure;
  for (const std::size_t i : report_order(**engine, *model)) {
    if (i >= expected.size() || i >= outputs->size()) continue;
    const Comparison c = compare_tensors((*outputs)[i], expected[i], args.rtol, args.atol);
    all_ok = all_ok && c.within_tolerance;
    if (!c.within_tolerance && first_failure.empty()) first_failure = (*engine)->outputs()[i].name;
    const std::string& name = (*engine)->outputs()[i].name;
    results.push_back({{"output", name},
                       {"pass", c.within_tolerance},
                       {"max_abs_error", c.max_abs_error},
                       {"mean_abs_error", c.mean_abs_error},
                       {"max_rel_error", c.max_rel_error},
                       {"mismatches", c.mismatches}});
    if (!args.json) {
      std::cout << (c.within_tolerance ? "PASS " : "FAIL ") << std::left << std::setw(24) << name
                << " " << c.describe() << "\n";
    }
  }
  if (args.json) {
    std::cout << nlohmann::json{{"model", args.onnx_path},
                                {"reference", reference},
                                {"rtol", args.rtol},
                                {"atol", args.atol},
                                {"pass", all_ok},
                                {"outputs", results},
                                {"first_failure", first_failure}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << (all_ok ? "PASSED" : "FAILED") << ": " << expected.size() << " output(s) vs "
              << reference << " (rtol " << args.rtol << ", atol " << args.atol << ")\n";
    if (args.mark_all && !first_failure.empty()) {
      std::cout << "first tensor out of tolerance (in node order): '" << first_failure << "'\n";
    }
  }
  return all_ok ? 0 : 1;
}

}  // namespace

void add_check_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd =
      app.add_subcommand("check", "Build a model and compare its outputs with a reference");
  cmd->footer(
      "DIR holds input_K.pb (and optionally output_K.pb) TensorProto files, the layout of ONNX's\n"
      "backend tests. Without expected outputs the reference is onnxruntime "
      "(scripts/fetch-third-party.sh).\n"
      "Exit status 0 only when every output is within tolerance.\n"
      "--mark-all makes every node's output a graph output (onnxruntime is then the reference)\n"
      "to find the first layer that diverges.\n"
      "Example:\n  voxrt check /usr/share/libonnx-testdata/data/node/test_gru_defaults/model.onnx "
      "\\\n"
      "    --data /usr/share/libonnx-testdata/data/node/test_gru_defaults/test_data_set_0\n"
      "A reduced-precision engine against the FP32 reference, with tolerances to match:\n"
      "  voxrt check model.onnx --data test_data_set_0 --precision fp16 --rtol 1e-2 --atol 1e-3");
  cmd->add_option("onnx", args->onnx_path, "ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("--data", args->data_dir, "Folder with input_K.pb [and output_K.pb]")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--rtol", args->rtol, "Relative tolerance, 0..1e6")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--atol", args->atol, "Absolute tolerance, 0..1e6")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_flag("--autotune", args->autotune, "Time tactics as voxrt build does (slower)");
  cmd->add_option("--precision", args->precision,
                  "Engine precision, as voxrt build (CPU: fp32, or fp16 recurrent weights)")
      ->capture_default_str();
  cmd->add_flag("--json", args->json, "Print one JSON object with per-output errors");
  cmd->add_flag("--mark-all", args->mark_all,
                "Compare every intermediate tensor with onnxruntime, in node order, and name the "
                "first one out of tolerance (fusions across marked tensors are not applied, as "
                "in Polygraphy)");
  cmd->callback([args, &exit_code] { exit_code = run_check(*args); });
}

}  // namespace voxrt::cli
