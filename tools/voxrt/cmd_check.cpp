// voxrt check: build an ONNX model, run it, and compare every output with a reference: the
// expected outputs of a test_data_set folder, or onnxruntime when the folder has none.
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "onnx_import/importer.h"
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
  std::vector<std::string> fixed_inputs;
};

int run_check(const CheckArgs& args) {
  BuilderConfig config;
  config.autotune = args.autotune;
  auto built = build_engine_from_onnx_file(args.onnx_path, config);
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
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    auto t = onnx_import::read_tensor_proto_file(str_cat(args.data_dir, "/input_", i, ".pb"));
    if (!t) {
      std::cerr << "error: input " << i << " ('" << infos[i].name << "'): " << t.status().message()
                << "\n";
      return 1;
    }
    inputs.push_back(std::move(*t));
  }
  std::vector<Tensor> expected;
  std::string reference = "test data";
  for (std::size_t i = 0; i < (*engine)->outputs().size(); ++i) {
    const std::string path = str_cat(args.data_dir, "/output_", i, ".pb");
    if (!std::filesystem::exists(path)) break;
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
    auto ort_result = ort::run_onnxruntime(args.onnx_path, names, inputs, output_names);
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
  for (std::size_t i = 0; i < expected.size() && i < outputs->size(); ++i) {
    const Comparison c = compare_tensors((*outputs)[i], expected[i], args.rtol, args.atol);
    all_ok = all_ok && c.within_tolerance;
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
    std::cout << nlohmann::json{{"model", args.onnx_path}, {"reference", reference},
                                {"rtol", args.rtol},       {"atol", args.atol},
                                {"pass", all_ok},          {"outputs", results}}
                     .dump(2)
              << "\n";
  } else {
    std::cout << (all_ok ? "PASSED" : "FAILED") << ": " << expected.size() << " output(s) vs "
              << reference << " (rtol " << args.rtol << ", atol " << args.atol << ")\n";
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
      "Example:\n  voxrt check /usr/share/libonnx-testdata/data/node/test_gru_defaults/model.onnx "
      "\\\n"
      "    --data /usr/share/libonnx-testdata/data/node/test_gru_defaults/test_data_set_0");
  cmd->add_option("onnx", args->onnx_path, "ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("--data", args->data_dir, "Folder with input_K.pb [and output_K.pb]")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--rtol", args->rtol, "Relative tolerance")->capture_default_str();
  cmd->add_option("--atol", args->atol, "Absolute tolerance")->capture_default_str();
  cmd->add_flag("--autotune", args->autotune, "Time tactics as voxrt build does (slower)");
  cmd->add_flag("--json", args->json, "Print one JSON object with per-output errors");
  cmd->callback([args, &exit_code] { exit_code = run_check(*args); });
}

}  // namespace voxrt::cli
