// voxrt debug: tools that explain a model's behaviour rather than run it. `debug precision`
// finds the quantized layers that cost words (precision_bisect.h) and prints a table, as
// Polygraphy's `debug precision` does for TensorRT, but judged by WER on real recordings.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "build_config_args.h"
#include "commands.h"
#include "precision_bisect.h"

namespace voxrt::cli {
namespace {

struct DebugPrecisionArgs {
  std::string onnx_path;
  std::string accuracy_data;
  double max_wer_increase = 0.3;
  bool each_layer = false;
  std::string engine_path;
  bool json = false;
  std::string save_json_path;
  BuildConfigArgs build;
};

nlohmann::json probe_json(const PrecisionProbe& probe) {
  return {{"label", probe.label},
          {"fp32_layers", probe.fp32_layers},
          {"int8_layers", probe.int8_layer_count},
          {"wer", probe.score.wer()},
          {"word_errors", probe.score.word_errors},
          {"reference_words", probe.score.reference_words},
          {"wer_increase_points", probe.wer_increase_points},
          {"passed", probe.passed}};
}

void print_probe(const PrecisionProbe& probe, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line), "  %-44s %4d %4zu  %7.2f %%  %+7.2f  %s\n", probe.label.c_str(),
                probe.int8_layer_count, probe.fp32_layers.size(), 100 * probe.score.wer(),
                probe.wer_increase_points, probe.passed ? "within" : "over");
  out << line;
}

void print_table(const PrecisionBisectResult& result, double limit, std::ostream& out) {
  char line[512];
  std::snprintf(line, sizeof(line),
                "fp32 reference: WER %.2f %% (%lld errors / %lld words, %d files)\n",
                100 * result.fp32.wer(), result.fp32.word_errors, result.fp32.reference_words,
                result.fp32.files);
  out << line;
  out << "quantized layers, most sensitive first (output error with that layer alone in int8, "
         "on the calibration data):\n";
  for (std::size_t i = 0; i < result.layers.size(); ++i) {
    const auto& layer = result.layers[i];
    std::snprintf(line, sizeof(line), "  %3zu  %-36s %-10s error %.4g  arg-max changed %.3g %%\n",
                  i + 1, layer.node.c_str(), layer.op.c_str(), layer.output_error,
                  100 * layer.argmax_changed);
    out << line;
  }
  out << "engines measured (limit +" << limit << " points):\n";
  std::snprintf(line, sizeof(line), "  %-44s %4s %4s  %9s  %7s  %s\n", "engine", "int8", "fp32",
                "WER", "points", "verdict");
  out << line;
  for (const auto& probe : result.probes) print_probe(probe, out);
  if (!result.each_layer.empty()) {
    out << "each layer alone in int8 (all others fp32):\n";
    for (const auto& probe : result.each_layer) print_probe(probe, out);
  }
  if (result.keep_fp32.empty()) {
    out << "result: every quantized layer can stay int8 (" << result.layers.size()
        << " layers within the limit)\n";
    return;
  }
  out << "result: keep " << result.keep_fp32.size() << " of " << result.layers.size()
      << " layers in fp32:";
  for (const auto& layer : result.keep_fp32) out << " --layer-precision " << layer << ":fp32";
  std::snprintf(line, sizeof(line), "\n  that engine: WER %.2f %% (%+.2f points)\n",
                100 * result.chosen.score.wer(), result.chosen.wer_increase_points);
  out << line;
}

int run_debug_precision(const DebugPrecisionArgs& args) {
  auto config = builder_config_from_args(args.build);
  if (!config) {
    std::cerr << "error: " << config.status().message() << "\n";
    return 2;
  }
  if (config->device != DeviceKind::kCpu) {
    std::cerr << "error: --device: debug precision measures INT8 engines, which the CPU backend "
                 "builds; expected cpu, found "
              << args.build.device << "\n";
    return 2;
  }
  PrecisionBisectOptions options;
  options.manifest_path = args.accuracy_data;
  options.max_wer_increase_points = args.max_wer_increase;
  options.threads = args.build.threads;
  options.each_layer = args.each_layer;
  options.on_step = [](const std::string& line) { std::cerr << line << "\n"; };
  auto result = bisect_precision(args.onnx_path, *config, options);
  if (!result) {
    std::cerr << "error: " << result.status().message() << "\n";
    return 1;
  }
  if (!args.engine_path.empty()) {
    std::ofstream out(args.engine_path, std::ios::binary | std::ios::trunc);
    out.write(result->chosen_engine.data(),
              static_cast<std::streamsize>(result->chosen_engine.size()));
    if (!out) {
      std::cerr << "error: cannot write " << args.engine_path << "\n";
      return 1;
    }
    std::cerr << "wrote " << args.engine_path << " (" << result->chosen.label << ")\n";
  }
  {
    nlohmann::json j;
    j["fp32"] = {{"wer", result->fp32.wer()},
                 {"word_errors", result->fp32.word_errors},
                 {"reference_words", result->fp32.reference_words},
                 {"files", result->fp32.files}};
    j["max_wer_increase_points"] = args.max_wer_increase;
    j["layers"] = nlohmann::json::array();
    for (const auto& layer : result->layers) {
      j["layers"].push_back({{"node", layer.node},
                             {"op", layer.op},
                             {"output_error", layer.output_error},
                             {"argmax_changed", layer.argmax_changed}});
    }
    j["probes"] = nlohmann::json::array();
    for (const auto& probe : result->probes) j["probes"].push_back(probe_json(probe));
    j["each_layer"] = nlohmann::json::array();
    for (const auto& probe : result->each_layer) j["each_layer"].push_back(probe_json(probe));
    j["keep_fp32"] = result->keep_fp32;
    j["chosen"] = probe_json(result->chosen);
    if (!args.save_json_path.empty()) {
      std::ofstream out(args.save_json_path, std::ios::trunc);
      out << j.dump(2) << "\n";
      if (!out) {
        std::cerr << "error: cannot write " << args.save_json_path << "\n";
        return 1;
      }
    }
    if (args.json) std::cout << j.dump(2) << "\n";
  }
  if (!args.json) print_table(*result, args.max_wer_increase, std::cout);
  return 0;
}

}  // namespace

void add_debug_command(CLI::App& app, int& exit_code) {
  CLI::App* debug = app.add_subcommand("debug", "Find out why a model or engine misbehaves");
  debug->require_subcommand(1);
  auto args = std::make_shared<DebugPrecisionArgs>();
  CLI::App* cmd = debug->add_subcommand(
      "precision", "Find the quantized layers that cost words (INT8 engines, by WER)");
  cmd->footer(
      "Builds the model in fp32 and in int8 and decodes --accuracy-data (path<TAB>text lines)\n"
      "with both; when the int8 WER is more than --max-wer-increase points above fp32, builds\n"
      "engines that keep the k most sensitive layers (output error alone, on the calibration\n"
      "data) in fp32, k found by binary search, then gives each kept layer back to int8 in turn\n"
      "while the limit holds, in passes until one changes nothing (so each kept layer was tried\n"
      "with exactly the others kept). Prints every engine measured and the --layer-precision "
      "arguments\n"
      "that `voxrt build` takes for the result; --each-layer also measures each layer alone.\n"
      "Every probe is one build and one decode of the manifest: use --no-autotune and a\n"
      "calibration cache to keep it quick.\n\n"
      "Example (the default model; test/clean/manifest.tsv and speech/ from "
      "recipes/data/synth.py):\n"
      "  voxrt debug precision --onnx models/default/model.onnx --precision int8 \\\n"
      "    --calibration-data speech/ --calibration-cache int8.calib \\\n"
      "    --accuracy-data test/clean/manifest.tsv --max-wer-increase 0.5 --no-autotune \\\n"
      "    --engine model_int8_mixed.engine");
  cmd->add_option("--onnx", args->onnx_path, "ONNX model")->required()->check(CLI::ExistingFile);
  cmd->add_option("--accuracy-data", args->accuracy_data,
                  "MANIFEST of recordings and their texts (path<TAB>text lines)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-wer-increase", args->max_wer_increase,
                  "The WER increase over fp32 allowed, in absolute percentage points")
      ->capture_default_str();
  cmd->add_flag("--each-layer", args->each_layer,
                "Also measure each quantized layer alone in int8 (one build per layer)");
  cmd->add_option("--engine", args->engine_path,
                  "Write the engine found (the fewest fp32 layers within the limit)");
  cmd->add_flag("--json", args->json, "Print the measurements as JSON on stdout (no table)");
  cmd->add_option("--save-json", args->save_json_path,
                  "Also write the measurements as JSON to this file");
  args->build.precision = "int8";
  add_build_config_options(*cmd, args->build);
  cmd->callback([args, &exit_code] { exit_code = run_debug_precision(*args); });
}

}  // namespace voxrt::cli
