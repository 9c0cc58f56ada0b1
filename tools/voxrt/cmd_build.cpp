// voxrt build: ONNX -> engine file, with optimization profiles, streaming states, autotuning
// and a timing cache.
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "progress_bar.h"
#include "shape_args.h"
#include "voxrt/builder.h"

namespace voxrt::cli {
namespace {

struct BuildArgs {
  std::string onnx_path;
  std::string engine_path;
  std::vector<std::string> profiles;
  std::vector<std::string> states;
  std::vector<std::string> fixed_inputs;
  std::vector<std::string> metadata;
  std::vector<std::string> layer_precisions;
  std::string timing_cache;
  std::string precision = "fp32";
  std::string device = "cpu";
  int threads = 1;
  int timing_iterations = 5;
  bool no_autotune = false;
  bool verbose = false;
  bool json = false;
};

int run_build(const BuildArgs& args) {
  BuilderConfig config;
  auto precision = precision_from_name(args.precision);
  if (!precision) {
    std::cerr << "error: " << precision.status().message() << "\n";
    return 2;
  }
  config.precision = *precision;
  for (const auto& spec : args.layer_precisions) {
    // NAME:PRECISION, split at the last ':' (ONNX node names may hold one).
    const auto colon = spec.rfind(':');
    auto layer = colon == std::string::npos || colon == 0
                     ? Expected<Precision>(invalid_argument("expected NAME:PRECISION"))
                     : precision_from_name(spec.substr(colon + 1));
    if (!layer) {
      std::cerr << "error: --layer-precision '" << spec << "': " << layer.status().message()
                << "\n";
      return 2;
    }
    config.layer_precisions[spec.substr(0, colon)] = *layer;
  }
  if (args.device == "cuda") {
    config.device = DeviceKind::kCuda;
  } else if (args.device != "cpu") {
    std::cerr << "error: --device '" << args.device << "': expected cpu or cuda\n";
    return 2;
  }
  auto profiles = parse_profiles(args.profiles);
  if (!profiles) {
    std::cerr << "error: " << profiles.status().message() << "\n";
    return 2;
  }
  config.profiles = *profiles;
  for (const auto& s : args.states) {
    auto pair = parse_state(s);
    if (!pair) {
      std::cerr << "error: " << pair.status().message() << "\n";
      return 2;
    }
    config.states.push_back(*pair);
  }
  for (const auto& f : args.fixed_inputs) {
    auto fixed = parse_fixed_input(f);
    if (!fixed) {
      std::cerr << "error: " << fixed.status().message() << "\n";
      return 2;
    }
    config.fixed_inputs.insert(*fixed);
  }
  for (const auto& m : args.metadata) {
    const auto eq = m.find('=');
    if (eq == std::string::npos) {
      std::cerr << "error: --metadata '" << m << "': expected KEY=VALUE\n";
      return 2;
    }
    config.metadata[m.substr(0, eq)] = m.substr(eq + 1);
  }
  config.timing_cache_path = args.timing_cache;
  config.threads = args.threads;
  config.autotune = !args.no_autotune;
  config.timing_iterations = args.timing_iterations;
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
    // Every autotuning candidate, as trtexec's verbose tactic log: which ones lost, by how much.
    j["tactic_timings"] = nlohmann::json::array();
    for (const auto& t : report.tactic_timings) {
      nlohmann::json row = {
          {"node", t.node}, {"tactic", t.tactic}, {"chosen", t.chosen}, {"profile", t.profile}};
      row["time_us"] = t.time_us >= 0 ? nlohmann::json(t.time_us) : nlohmann::json(nullptr);
      j["tactic_timings"].push_back(row);
    }
    std::cout << j.dump(2) << "\n";
  } else {
    // Warnings always; every other rewrite and note with -v.
    for (const auto& c : report.pass_changes) {
      if (args.verbose || c.starts_with("warning:")) std::cerr << "  " << c << "\n";
    }
    std::cerr << "built " << args.engine_path << " (" << engine->size() << " bytes) in "
              << report.build_seconds << " s: " << report.pass_changes.size() << " rewrites, "
              << report.tactics_timed << " tactics timed, " << report.timing_cache_hits
              << " timing-cache hits\n";
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
      "Examples:\n"
      "  voxrt build --onnx ds2.onnx --engine ds2.engine --profile "
      "x:1x1x161x100/1x1x161x200/8x1x161x400\n"
      "  voxrt build --onnx stream.onnx --engine stream.engine --state h_in:h_out --timing-cache "
      "cpu.cache\n"
      "  voxrt build --onnx silero_vad.onnx --engine vad.engine --fixed-input sr=16000 --state "
      "state:stateN\n"
      "  voxrt build --onnx ds2.onnx --engine ds2_fp16.engine --device cuda --precision fp16 "
      "--layer-precision /fc/MatMul:fp32\n"
      "  voxrt build --onnx ds2.onnx --engine ds2_cpu_fp16.engine --precision fp16\n"
      "On the CPU, --precision fp16 stores the recurrent weights (GRU/LSTM/RNN R) in FP16 and\n"
      "keeps FP32 arithmetic: a batch-1 step reads half the bytes. Other layers stay fp32.\n"
      "Repeating --profile for the same input adds another optimization profile; with\n"
      "autotuning each profile's kernels are timed at its own opt shape (inspect shows the\n"
      "layers whose tactic differs), and a run uses the first profile that admits its shapes.");
  cmd->add_option("--onnx", args->onnx_path, "ONNX model to compile")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--engine", args->engine_path, "Engine file to write")->required();
  cmd->add_option("--profile", args->profiles,
                  "NAME:MIN/OPT/MAX shapes of a dynamic input, e.g. x:1x80x16/1x80x64/8x80x400");
  cmd->add_option("--state", args->states,
                  "IN:OUT streaming state pair kept by the runtime's slot pool");
  cmd->add_option("--fixed-input", args->fixed_inputs,
                  "NAME=VALUE binds a scalar input at build time (folds branches)");
  cmd->add_option("--metadata", args->metadata, "KEY=VALUE added to the engine metadata");
  cmd->add_option("--timing-cache", args->timing_cache, "Timing cache file (read, then updated)");
  cmd->add_option("--precision", args->precision,
                  "fp32 | tf32 | fp16 | bf16 | int8 (cuda); fp32 | fp16 (cpu: FP16 recurrent "
                  "weights)")
      ->capture_default_str();
  cmd->add_option("--layer-precision", args->layer_precisions,
                  "NODE:PRECISION runs the layer made from ONNX node NODE at PRECISION instead of "
                  "--precision, e.g. /fc/MatMul:fp32 keeps the output projection of an fp16 engine "
                  "in fp32 (repeatable; inspect shows each layer's precision)");
  cmd->add_option("--device", args->device, "cpu | cuda")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads used to time tactics (match the deployment)")
      ->capture_default_str();
  cmd->add_option("--timing-iterations", args->timing_iterations, "Timed runs per tactic (median)")
      ->capture_default_str();
  cmd->add_flag("--no-autotune", args->no_autotune,
                "Take the first fast tactic instead of timing (fast builds)");
  cmd->add_flag("--verbose,-v", args->verbose, "Print the config and every graph rewrite");
  cmd->add_flag("--json", args->json, "Print a JSON build report on stdout");
  cmd->callback([args, &exit_code] { exit_code = run_build(*args); });
}

}  // namespace voxrt::cli
