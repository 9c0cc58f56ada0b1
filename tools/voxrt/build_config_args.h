// The options that say how an engine is compiled (precision, profiles, states, calibration,
// autotuning), shared by `voxrt build` and `voxrt debug precision` so that both read the same
// flags the same way and a layer list printed by one can be pasted into the other.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "voxrt/builder.h"

namespace voxrt::cli {

struct BuildConfigArgs {
  std::vector<std::string> profiles;
  std::vector<std::string> states;
  std::vector<std::string> fixed_inputs;
  std::vector<std::string> metadata;
  std::vector<std::string> layer_precisions;
  std::string timing_cache;
  std::string calibration_data;
  std::string calibrator = "entropy";
  double percentile = 99.99;
  std::string calibration_cache;
  double max_output_error = 0;
  std::string precision = "fp32";
  std::string device = "cpu";
  int threads = 1;
  int timing_iterations = 5;
  bool no_autotune = false;
};

// Registers the options on `cmd`; `args` must outlive the parse.
void add_build_config_options(CLI::App& cmd, BuildConfigArgs& args);

// The BuilderConfig the options describe. Errors name the option and what it expected.
Expected<BuilderConfig> builder_config_from_args(const BuildConfigArgs& args);

}  // namespace voxrt::cli
