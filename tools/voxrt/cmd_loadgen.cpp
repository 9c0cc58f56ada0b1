// voxrt loadgen: concurrent real-time WebSocket clients against `voxrt serve` (loopback only),
// reporting the latencies a client sees, refusals, errors and WER.
#include <fstream>
#include <iostream>

#include "commands.h"
#include "server/load_generator.h"

namespace voxrt::cli {
namespace {

struct LoadgenArgs {
  server::LoadGenConfig config;
  std::string auth_token_file;
  bool json = false;
};

int run_loadgen(LoadgenArgs& args) {
  server::LoadGenConfig config = args.config;
  if (!args.auth_token_file.empty()) {
    std::ifstream in(args.auth_token_file);
    if (!in || !std::getline(in, config.auth_token)) {
      std::cerr << "error: cannot read --auth-token-file " << args.auth_token_file << "\n";
      return 2;
    }
  }
  auto report = server::run_load_generator(config);
  if (!report) {
    std::cerr << "error: " << report.status().message() << "\n";
    return 2;
  }
  if (args.json) {
    std::cout << report->to_json() << "\n";
  } else {
    std::cout << report->to_text();
  }
  return report->errors == 0 ? 0 : 1;
}

}  // namespace

void add_loadgen_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<LoadgenArgs>();
  CLI::App* cmd = app.add_subcommand(
      "loadgen", "Concurrent WebSocket clients streaming WAVs to voxrt serve (loopback only)");
  cmd->footer(
      "Each stream sends 20 ms PCM16 frames (Vosk protocol) and measures the time to each frame's\n"
      "reply, the first non-empty partial (from the stream's start) and the final (from eof).\n"
      "WER is computed where FILE.txt sits next to FILE.wav. Exit status 1 when a stream failed.\n"
      "Example:\n  voxrt loadgen --url ws://127.0.0.1:2700 --streams 8 --wav-dir samples "
      "--realtime");
  auto& c = args->config;
  cmd->add_option("--url", c.url, "ws://HOST:PORT[/path], HOST a loopback address")->required();
  cmd->add_option("--streams", c.streams, "Concurrent streams, 1..100000")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--wav-dir", c.wav_dir, "Folder of .wav files (and optional .txt references)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("--realtime", c.realtime,
                "Send on a real-time clock (otherwise each frame waits for the last reply)");
  cmd->add_option("--duration", c.duration_s,
                  "Seconds to keep streams busy (files repeat), 0..86400; 0: each stream sends "
                  "one file")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--chunk-ms", c.chunk_ms, "Audio per frame, 1..60000")
      ->capture_default_str()
      ->check(CLI::Range(1, 60000));
  cmd->add_option("--threads", c.threads, "Client I/O threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--auth-token-file", args->auth_token_file, "Bearer token file")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", args->json, "Print the report as one JSON object");
  cmd->callback([args, &exit_code] { exit_code = run_loadgen(*args); });
}

}  // namespace voxrt::cli
