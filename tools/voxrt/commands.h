// The voxrt command line: one subcommand per file, each registering itself on the app here.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace voxrt::cli {

// `voxrt --version`: the release, the commit it was built from, the engine format it reads and
// writes, and whether the CUDA backend is there.
std::string version_text();

// Each adds its subcommand; the callback stores the process exit code in `exit_code`.
void add_build_command(CLI::App& app, int& exit_code);
void add_inspect_command(CLI::App& app, int& exit_code);
void add_run_command(CLI::App& app, int& exit_code);
void add_check_command(CLI::App& app, int& exit_code);
void add_bench_command(CLI::App& app, int& exit_code);
void add_transcribe_command(CLI::App& app, int& exit_code);
void add_serve_command(CLI::App& app, int& exit_code);
void add_loadgen_command(CLI::App& app, int& exit_code);
void add_deploy_command(CLI::App& app, int& exit_code);
void add_debug_command(CLI::App& app, int& exit_code);

}  // namespace voxrt::cli
