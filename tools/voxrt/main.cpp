// voxrt: compile speech models offline, run them fast online.
#include <iostream>

#include "commands.h"
#ifdef VOXRT_HAVE_CUDA
#include "backends/cuda/cuda_backend.h"
#endif

int main(int argc, char** argv) {
#ifdef VOXRT_HAVE_CUDA
  voxrt::backends::cuda::register_cuda_backend();
#endif
  CLI::App app{
      "voxrt: a streaming speech-recognition engine built the TensorRT way.\n"
      "Compile an ONNX model once (build), then inspect, check, benchmark and run the engine."};
  app.require_subcommand(1);
  app.footer(
      "Typical flow:\n"
      "  voxrt build --onnx model.onnx --engine model.engine   compile for this machine\n"
      "  voxrt inspect model.engine                            layers, tactics, memory plan\n"
      "  voxrt check model.onnx --data test_data_set_0         compare with reference outputs\n"
      "  voxrt bench model.engine --shapes x:1x80x200          latency percentiles\n"
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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return exit_code;
}
