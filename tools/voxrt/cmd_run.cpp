// voxrt run: one inference on ONNX TensorProto files (input_K.pb -> output_K.pb, the layout of
// ONNX's backend tests), so engines can be checked with any tool that reads those files.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "onnx_import/importer.h"
#include "thread_check.h"
#include "voxrt/engine.h"

namespace voxrt::cli {
namespace {

int run_run(const std::string& engine_path, const std::string& inputs_dir,
            const std::string& outputs_dir, int threads) {
  auto engine = Engine::load_file(engine_path);
  if (!engine) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  std::vector<Tensor> inputs;
  for (std::size_t i = 0; i < (*engine)->inputs().size(); ++i) {
    const std::string path = str_cat(inputs_dir, "/input_", i, ".pb");
    auto t = onnx_import::read_tensor_proto_file(path);
    if (!t) {
      std::cerr << "error: input " << i << " ('" << (*engine)->inputs()[i].name
                << "'): " << t.status().message() << "\n";
      return 1;
    }
    inputs.push_back(std::move(*t));
  }
  if (const std::string warning = thread_count_warning(**engine, threads); !warning.empty())
    std::cerr << warning << "\n";
  auto context = (*engine)->create_context(threads);
  if (!context) {
    std::cerr << "error: " << context.status().message() << "\n";
    return 1;
  }
  auto outputs = (*context)->run(inputs);
  if (!outputs) {
    std::cerr << "error: " << outputs.status().message() << "\n";
    return 1;
  }
  std::filesystem::create_directories(outputs_dir);
  for (std::size_t i = 0; i < outputs->size(); ++i) {
    const std::string path = str_cat(outputs_dir, "/output_", i, ".pb");
    Status s =
        onnx_import::write_tensor_proto_file(path, (*outputs)[i], (*engine)->outputs()[i].name);
    if (!s) {
      std::cerr << "error: " << s.message() << "\n";
      return 1;
    }
    std::cout << path << "  " << (*engine)->outputs()[i].name << " "
              << dtype_name((*outputs)[i].dtype()) << " " << dims_to_string((*outputs)[i].dims())
              << "\n";
  }
  return 0;
}

}  // namespace

void add_run_command(CLI::App& app, int& exit_code) {
  auto engine = std::make_shared<std::string>();
  auto inputs = std::make_shared<std::string>();
  auto outputs = std::make_shared<std::string>();
  auto threads = std::make_shared<int>(1);
  CLI::App* cmd = app.add_subcommand("run", "Run an engine once on TensorProto files");
  cmd->footer(
      "Inputs are DIR/input_K.pb in the engine's input order; outputs are written as "
      "DIR/output_K.pb.\n"
      "Example:\n  voxrt run model.engine --inputs test_data_set_0 --outputs out");
  cmd->add_option("engine", *engine, "Engine file")->required()->check(CLI::ExistingFile);
  cmd->add_option("--inputs", *inputs, "Folder with input_K.pb files")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--outputs", *outputs, "Folder to write output_K.pb files into")->required();
  cmd->add_option("--threads", *threads, "Kernel threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->callback([=, &exit_code] { exit_code = run_run(*engine, *inputs, *outputs, *threads); });
}

}  // namespace voxrt::cli
