// voxrt: compile speech models offline, run them fast online.
#include <functional>
#include <iostream>
#include <string>

#include "commands.h"

int main(int argc, char** argv) {
  CLI::App app{
      "voxrt: a streaming speech-recognition engine built the TensorRT way.\n"
      "Compile an ONNX model once (build), then inspect, check, benchmark and run the engine."};
  // A callback: the text opens the CUDA plugin, which only --version should pay for.
  app.set_version_flag("--version", std::function<std::string()>(voxrt::cli::version_text));
  app.require_subcommand(1);
  app.footer(
      "Typical flow:\n"
      "  voxrt build --onnx model.onnx --engine model.engine   compile for this machine\n"
      "  voxrt inspect model.engine                            layers, tactics, memory plan\n"
      "  voxrt check model.onnx --data test_data_set_0         compare with reference outputs\n"
      "  voxrt bench model.engine --shapes features:1x32x80    latency percentiles\n"
      "  voxrt transcribe --engine model.engine samples/play_music.wav   speech to text\n"
      "  voxrt deploy default --repo models/repo               build, gate, publish a version\n"
      "  voxrt debug precision --help                          which int8 layers cost words\n"
      "Run 'voxrt <command> --help' for each command's options.");
  int exit_code = 0;
  voxrt::cli::add_build_command(app, exit_code);
  voxrt::cli::add_inspect_command(app, exit_code);
  voxrt::cli::add_run_command(app, exit_code);
  voxrt::cli::add_check_command(app, exit_code);
  voxrt::cli::add_bench_command(app, exit_code);
  voxrt::cli::add_transcribe_command(app, exit_code);
  voxrt::cli::add_serve_command(app, exit_code);
  voxrt::cli::add_loadgen_command(app, exit_code);
  voxrt::cli::add_deploy_command(app, exit_code);
  voxrt::cli::add_debug_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
