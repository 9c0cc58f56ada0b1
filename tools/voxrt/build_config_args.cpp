#include "build_config_args.h"

#include "shape_args.h"

namespace voxrt::cli {

void add_build_config_options(CLI::App& cmd, BuildConfigArgs& args) {
  cmd.add_option("--profile", args.profiles,
                 "NAME:MIN/OPT/MAX shapes of a dynamic input, e.g. x:1x80x16/1x80x64/8x80x400");
  cmd.add_option("--state", args.states,
                 "IN:OUT streaming state pair kept by the runtime's slot pool");
  cmd.add_option("--fixed-input", args.fixed_inputs,
                 "NAME=VALUE binds a scalar input at build time (folds branches)");
  cmd.add_option("--metadata", args.metadata, "KEY=VALUE added to the engine metadata");
  cmd.add_option("--timing-cache", args.timing_cache, "Timing cache file (read, then updated)");
  cmd.add_option("--precision", args.precision,
                 "fp32 | tf32 | fp16 | bf16 (cuda); fp32 | fp16 (cpu: FP16 recurrent "
                 "weights) | int8 (calibrated, needs --calibration-data or a cache; cuda: "
                 "the GEMM layers, the rest fp16)")
      ->capture_default_str();
  cmd.add_option("--calibration-data", args.calibration_data,
                 "int8: a folder of audio files (.wav, .flac, ...; run through the model's own "
                 "front end in streaming chunks) or of test_data_set_N/input_K.pb tensor sets")
      ->check(CLI::ExistingDirectory);
  cmd.add_option("--calibrator", args.calibrator,
                 "int8: how activation histograms become ranges: entropy | minmax | percentile")
      ->capture_default_str();
  cmd.add_option("--percentile", args.percentile,
                 "int8 with --calibrator percentile: the mass kept inside the range, in %")
      ->capture_default_str();
  cmd.add_option("--calibration-cache", args.calibration_cache,
                 "int8: file of calibrated ranges and layer precisions; a rebuild of the same "
                 "model, front end and settings reads it and skips calibration (written after "
                 "calibrating)");
  cmd.add_option("--max-output-error", args.max_output_error,
                 "int8: keep the most sensitive layers in fp32 until the relative error of the "
                 "model's outputs on the calibration data is at most this (0: only the final "
                 "projection stays fp32)")
      ->capture_default_str();
  cmd.add_option("--layer-precision", args.layer_precisions,
                 "NODE:PRECISION runs the layer made from ONNX node NODE at PRECISION instead of "
                 "--precision, e.g. /fc/MatMul:fp32 keeps the output projection of an fp16 engine "
                 "in fp32 (repeatable; inspect shows each layer's precision)");
  cmd.add_option("--device", args.device, "cpu | cuda")->capture_default_str();
  cmd.add_option("--threads", args.threads,
                 "Threads used to time tactics, 1..256 (match the deployment: run and bench "
                 "warn when they differ)")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd.add_option("--timing-iterations", args.timing_iterations,
                 "Timed runs per tactic (median), 1..10000")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd.add_flag("--no-autotune", args.no_autotune,
               "Take the first fast tactic instead of timing (fast builds)");
}

Expected<BuilderConfig> builder_config_from_args(const BuildConfigArgs& args) {
  BuilderConfig config;
  VOXRT_ASSIGN_OR_RETURN(config.precision, precision_from_name(args.precision));
  for (const auto& spec : args.layer_precisions) {
    // NAME:PRECISION, split at the last ':' (ONNX node names may hold one).
    const auto colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return invalid_argument("--layer-precision '", spec, "': expected NAME:PRECISION");
    auto layer = precision_from_name(spec.substr(colon + 1));
    if (!layer)
      return invalid_argument("--layer-precision '", spec, "': ", layer.status().message());
    config.layer_precisions[spec.substr(0, colon)] = *layer;
  }
  if (args.device == "cuda") {
    config.device = DeviceKind::kCuda;
  } else if (args.device != "cpu") {
    return invalid_argument("--device '", args.device, "': expected cpu or cuda");
  }
  VOXRT_ASSIGN_OR_RETURN(config.profiles, parse_profiles(args.profiles));
  for (const auto& s : args.states) {
    VOXRT_ASSIGN_OR_RETURN(auto pair, parse_state(s));
    config.states.push_back(pair);
  }
  for (const auto& f : args.fixed_inputs) {
    VOXRT_ASSIGN_OR_RETURN(auto fixed, parse_fixed_input(f));
    config.fixed_inputs.insert(fixed);
  }
  for (const auto& m : args.metadata) {
    const auto eq = m.find('=');
    if (eq == std::string::npos)
      return invalid_argument("--metadata '", m, "': expected KEY=VALUE");
    config.metadata[m.substr(0, eq)] = m.substr(eq + 1);
  }
  config.timing_cache_path = args.timing_cache;
  auto calibrator = calibrator_from_name(args.calibrator);
  if (!calibrator) return invalid_argument("--calibrator: ", calibrator.status().message());
  config.int8.calibrator = *calibrator;
  config.int8.percentile = args.percentile;
  config.int8.cache_path = args.calibration_cache;
  config.int8.max_output_error = args.max_output_error;
  if (!args.calibration_data.empty()) {
    auto source = make_calibration_source(args.calibration_data);
    if (!source) return invalid_argument("--calibration-data: ", source.status().message());
    config.int8.data = *source;
  }
  config.threads = args.threads;
  config.autotune = !args.no_autotune;
  config.timing_iterations = args.timing_iterations;
  return config;
}

}  // namespace voxrt::cli
