// voxrt build: ONNX -> engine file, with optimization profiles, streaming states, autotuning
// and a timing cache.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "accuracy_gate.h"
#include "build_config_args.h"
#include "commands.h"
#include "model_import/model_dir_import.h"
#include "progress_bar.h"
#include "voxrt/builder.h"

namespace voxrt::cli {
namespace {

struct BuildArgs {
  std::string onnx_path;
  std::string model_dir;
  int max_batch = 32;
  int max_beam = 8;
  std::string language;  // empty: detected per stream
  std::string engine_path;
  BuildConfigArgs build;
  std::string accuracy_data;
  double max_wer_increase = 0.3;
  bool verbose = false;
  bool json = false;
};

// The precision a layer kept out of INT8 runs at: FP32 on the CPU, FP16 on the CUDA backend.
const char* non_int8_precision(DeviceKind device) {
  return device == DeviceKind::kCuda ? "fp16" : "fp32";
}

// Where each quantizable layer ended up, with its measured sensitivity.
void print_int8_layers(const std::vector<Int8LayerReport>& layers, DeviceKind device,
                       std::ostream& out) {
  if (layers.empty()) return;
  out << "  int8 layers (output error / arg-max changes: that layer alone in int8, on the "
         "calibration data):\n";
  for (const auto& layer : layers) {
    char error[32] = "-", argmax[32] = "-";
    if (layer.output_error >= 0) std::snprintf(error, sizeof(error), "%.3g", layer.output_error);
    if (layer.argmax_changed >= 0)
      std::snprintf(argmax, sizeof(argmax), "%.3g%%", 100 * layer.argmax_changed);
    char line[512];
    std::snprintf(line, sizeof(line), "    %-28s %-12s %-5s err %-9s argmax %-8s %s\n",
                  layer.node.c_str(), layer.op.c_str(),
                  layer.int8 ? "int8" : non_int8_precision(device), error, argmax,
                  layer.reason.c_str());
    out << line;
  }
}

// --accuracy-data: false (and nothing written) when the engine fails the gate or it cannot run.
bool passes_accuracy_gate(const BuildArgs& args, const BuilderConfig& config,
                          const std::string& engine, const BuildReport& report) {
  AccuracyGateOptions options;
  options.manifest_path = args.accuracy_data;
  options.max_wer_increase_points = args.max_wer_increase;
  options.threads = args.build.threads;
  std::cerr << "accuracy gate: decoding " << args.accuracy_data
            << " with this engine and an fp32 build of the same model\n";
  auto gate = run_accuracy_gate(args.onnx_path, config, engine, report, options);
  if (!gate) {
    std::cerr << "error: accuracy gate: " << gate.status().message() << "\n";
    return false;
  }
  std::cerr << "accuracy gate: " << gate->describe() << ", limit +" << args.max_wer_increase
            << " points: " << (gate->passed ? "passed" : "REFUSED") << "\n";
  if (gate->passed) return true;
  std::cerr << "  quantized layers, most sensitive first (alone, on the calibration data):\n";
  for (const auto& line : gate->sensitivity) std::cerr << "    " << line << "\n";
  std::cerr << "  would keep in fp32:";
  for (const auto& keep : gate->keep_fp32) std::cerr << " --layer-precision " << keep;
  std::cerr << "\n  (or better calibration data); " << args.engine_path << " not written\n";
  return false;
}

int run_build(const BuildArgs& args) {
  auto parsed = builder_config_from_args(args.build);
  if (!parsed) {
    std::cerr << "error: " << parsed.status().message() << "\n";
    return 2;
  }
  BuilderConfig config = std::move(*parsed);
  if (args.onnx_path.empty() == args.model_dir.empty()) {
    std::cerr << "error: give either --onnx MODEL.onnx (one engine) or --model-dir DIR (an "
                 "exported model folder -> an engine bundle)\n";
    return 2;
  }
  if (!args.model_dir.empty() && !args.accuracy_data.empty()) {
    std::cerr << "error: --accuracy-data gates single engines (--onnx); not --model-dir bundles\n";
    return 2;
  }
  if (!args.model_dir.empty()) {
    if (!args.build.profiles.empty() || !args.build.states.empty() ||
        !args.build.fixed_inputs.empty()) {
      std::cerr << "error: --model-dir sets each engine's profiles and states from the export; "
                   "drop --profile/--state/--fixed-input (use --max-batch, --max-beam)\n";
      return 2;
    }
    model_import::ModelDirImportOptions options;
    options.model_dir = args.model_dir;
    options.bundle_dir = args.engine_path;
    options.build = config;
    options.max_batch = args.max_batch;
    options.max_beam = args.max_beam;
    options.language = args.language;
    options.on_step = [](const std::string& line) { std::cerr << line << "\n"; };
    auto imported = model_import::import_model_dir(options);
    if (!imported) {
      std::cerr << "error: " << imported.status().message() << "\n";
      return 1;
    }
    for (const auto& note : imported->notes) std::cerr << "  " << note << "\n";
    std::cerr << "built bundle " << args.engine_path << " (" << imported->family << ", from the "
              << imported->layout << " layout)\n";
    if (args.json) {
      nlohmann::json j = {{"bundle", args.engine_path},
                          {"family", imported->family},
                          {"layout", imported->layout},
                          {"notes", imported->notes}};
      std::cout << j.dump(2) << "\n";
    }
    return 0;
  }
  ProgressBar bar;
  config.on_progress = [&](const BuildProgress& p) {
    bar.update(p.stage, p.done, p.total, p.detail);
  };
  if (args.verbose) std::cerr << "config: " << config.describe() << "\n";

  BuildReport report;
  auto engine = build_engine_from_onnx_file(args.onnx_path, config, &report);
  bar.finish();
  if (!engine) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  if (!args.accuracy_data.empty() && !passes_accuracy_gate(args, config, *engine, report)) return 1;
  std::ofstream out(args.engine_path, std::ios::binary | std::ios::trunc);
  out.write(engine->data(), static_cast<std::streamsize>(engine->size()));
  if (!out) {
    std::cerr << "error: cannot write " << args.engine_path << "\n";
    return 1;
  }
  if (args.json) {
    nlohmann::json j;
    j["engine"] = args.engine_path;
    j["engine_bytes"] = engine->size();
    j["build_seconds"] = report.build_seconds;
    j["tactics_timed"] = report.tactics_timed;
    j["timing_cache_hits"] = report.timing_cache_hits;
    j["rewrites"] = report.pass_changes;
    j["warnings"] = report.warnings;
    j["notes"] = report.notes;
    // Every autotuning candidate, as trtexec's verbose tactic log: which ones lost, by how much.
    j["tactic_timings"] = nlohmann::json::array();
    for (const auto& t : report.tactic_timings) {
      nlohmann::json row = {
          {"node", t.node}, {"tactic", t.tactic}, {"chosen", t.chosen}, {"profile", t.profile}};
      row["time_us"] = t.time_us >= 0 ? nlohmann::json(t.time_us) : nlohmann::json(nullptr);
      j["tactic_timings"].push_back(row);
    }
    j["int8_layers"] = nlohmann::json::array();
    for (const auto& layer : report.int8_layers) {
      j["int8_layers"].push_back(
          {{"node", layer.node},
           {"op", layer.op},
           {"precision", layer.int8 ? "int8" : non_int8_precision(config.device)},
           {"reason", layer.reason},
           {"input_range", {layer.input_min, layer.input_max}},
           {"input_scale", layer.input_scale},
           {"input_zero_point", layer.input_zero_point},
           {"output_error",
            layer.output_error >= 0 ? nlohmann::json(layer.output_error) : nlohmann::json(nullptr)},
           {"argmax_changed", layer.argmax_changed >= 0 ? nlohmann::json(layer.argmax_changed)
                                                        : nlohmann::json(nullptr)}});
    }
    std::cout << j.dump(2) << "\n";
  } else {
    print_int8_layers(report.int8_layers, config.device, std::cerr);
    // Warnings always; rewrites and notes with -v.
    if (args.verbose) {
      for (const auto& c : report.pass_changes) std::cerr << "  " << c << "\n";
      for (const auto& c : report.notes) std::cerr << "  " << c << "\n";
    }
    for (const auto& c : report.warnings) std::cerr << "  " << c << "\n";
    std::cerr << "built " << args.engine_path << " (" << engine->size() << " bytes) in "
              << report.build_seconds << " s: " << report.pass_changes.size() << " rewrites, "
              << report.warnings.size() << " warning(s), " << report.tactics_timed
              << " tactics timed, " << report.timing_cache_hits << " timing-cache hits\n";
  }
  return 0;
}

}  // namespace

void add_build_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App* cmd =
      app.add_subcommand("build", "Compile an ONNX model into an engine for this machine");
  cmd->footer(
      "The engine records the target it was built for, the chosen kernels (tactics) and the\n"
      "optimization profiles; the runtime loads it without ONNX.\n\n"
      "A streaming model whose metadata names its chunk (voxrt.chunk_frames) is tuned at that\n"
      "chunk when no --profile is given; its states (voxrt.state_pairs) need no --state, and\n"
      "NAME.metadata.txt beside NAME.onnx adds KEY=VALUE metadata (docs/model_contract.md).\n\n"
      "Examples (model.onnx: the default model, models/default/model.onnx):\n"
      "  voxrt build --onnx model.onnx --engine model.engine\n"
      "  voxrt build --onnx model.onnx --engine model_batched.engine --timing-cache cpu.cache "
      "--profile features:1x4x80/1x32x80/1x32x80 --profile features:2x4x80/8x32x80/64x32x80\n"
      "  voxrt build --onnx model.onnx --engine model_fp16.engine --precision fp16\n"
      "  voxrt build --onnx silero_vad_v5.onnx --engine vad.engine --fixed-input sr=16000 "
      "--profile input:1x576/8x576/32x576 --profile state:2x1x128/2x8x128/2x32x128\n"
      "  voxrt build --onnx model.onnx --engine gpu.engine --device cuda --precision fp16 "
      "--profile features:1x32x80/512x32x80/1024x32x80\n"
      "  voxrt build --onnx model.onnx --engine model_int8.engine --precision int8 "
      "--calibration-data . --calibration-cache int8.calib\n"
      "  voxrt build --model-dir sherpa-onnx-streaming-zipformer-en/ --engine zipformer.bundle\n"
      "On the CPU, --precision fp16 stores the recurrent weights (GRU/LSTM/RNN R) in FP16 and\n"
      "keeps FP32 arithmetic: a batch-1 step reads half the bytes. Other layers stay fp32.\n"
      "--precision int8 (CPU) quantizes the dense and recurrent layers: weights per output\n"
      "channel, activations per tensor with ranges calibrated on --calibration-data; the final\n"
      "projection stays fp32, --layer-precision NODE:fp32 keeps others; inspect shows scales.\n"
      "With --device cuda, int8 runs MatMul/Gemm layers with constant weights as cuBLASLt\n"
      "INT8 GEMMs (same calibration, done on the CPU) and every other layer in fp16.\n"
      "Repeating --profile for the same input adds another optimization profile; with\n"
      "autotuning each profile's kernels are timed at its own opt shape (inspect shows the\n"
      "layers whose tactic differs), and a run uses the first profile that admits its shapes.");
  cmd->add_option("--onnx", args->onnx_path, "ONNX model to compile")->check(CLI::ExistingFile);
  cmd->add_option("--model-dir", args->model_dir,
                  "A model folder as its ecosystem exports it (icefall/sherpa-onnx streaming "
                  "transducer: encoder/decoder/joiner .onnx + tokens.txt; NeMo; optimum Whisper; "
                  "torchaudio Emformer RNN-T: transcriber/predictor/joiner .onnx, "
                  "global_stats.json, SentencePiece .model; docs/model_contract.md); --engine "
                  "then names the engine bundle folder to write")
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--engine", args->engine_path,
                  "Engine file to write (a bundle folder with --model-dir)")
      ->required();
  cmd->add_option("--max-batch", args->max_batch,
                  "--model-dir: streams per encoder call the engines are built for, 1..4096")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--language", args->language,
                  "--model-dir, multilingual Whisper exports: the language the prompt names "
                  "(generation_config.json lang_to_id's <|xx|>); without it each stream's "
                  "language is detected from its first 30 s window");
  cmd->add_option("--max-beam", args->max_beam,
                  "--model-dir: hypotheses per stream the decoder/joiner engines are built for, "
                  "1..64")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  add_build_config_options(*cmd, args->build);
  cmd->add_option("--accuracy-data", args->accuracy_data,
                  "MANIFEST (path<TAB>text lines): decode it with this engine and an fp32 build "
                  "of the same model; refuse to write the engine when its WER is higher by more "
                  "than --max-wer-increase")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-wer-increase", args->max_wer_increase,
                  "with --accuracy-data: the WER increase allowed, in absolute percentage points")
      ->capture_default_str();
  cmd->add_flag("--verbose,-v", args->verbose, "Print the config and every graph rewrite");
  cmd->add_flag("--json", args->json, "Print a JSON build report on stdout");
  cmd->callback([args, &exit_code] { exit_code = run_build(*args); });
}

}  // namespace voxrt::cli
