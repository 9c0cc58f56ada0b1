// voxrt serve: the streaming recognition server (WebSocket, Vosk protocol; HTTP health, metrics
// and OpenAI-style uploads). docs/server.md has the protocol, limits and metrics.
#include <fstream>
#include <iostream>

#include "commands.h"
#include "front_end_models.h"
#include "server/server.h"

namespace voxrt::cli {
namespace {

struct ServeArgs {
  server::ServerConfig config;
  std::string engine;
  std::string devices = "auto";
  std::string decoder = "greedy";
  std::string vad = "energy";
  std::string vad_model;
  int beam_width = 8;
  std::string auth_token_file;
};

int run_serve(ServeArgs& args) {
  server::ServerConfig config = args.config;
  config.recognizer.engine_path = args.engine;
  auto devices = server::parse_devices(args.devices);
  if (!devices) {
    std::cerr << "error: " << devices.status().message() << "\n";
    return 2;
  }
  config.devices = std::move(*devices);
  if (args.decoder != "greedy" && args.decoder != "beam") {
    std::cerr << "error: --decoder '" << args.decoder << "': expected greedy or beam\n";
    return 2;
  }
  config.recognizer.decoder =
      args.decoder == "beam" ? stream::DecoderKind::kBeam : stream::DecoderKind::kGreedy;
  config.recognizer.beam.beam_width = args.beam_width;
  if (args.vad != "energy" && args.vad != "off" && args.vad != "silero") {
    std::cerr << "error: --vad '" << args.vad << "': expected silero, energy or off\n";
    return 2;
  }
  config.recognizer.vad = args.vad == "off"      ? stream::VadKind::kOff
                          : args.vad == "energy" ? stream::VadKind::kEnergy
                                                 : stream::VadKind::kSilero;
  if (args.vad == "silero") {
    if (args.vad_model.empty()) {
      std::cerr << "error: --vad silero needs --vad-model silero_vad_v5.onnx (or an engine)\n";
      return 2;
    }
    auto engine = silero_vad_engine(args.vad_model);
    if (!engine) {
      std::cerr << "error: " << engine.status().message() << "\n";
      return 1;
    }
    config.recognizer.silero_engine_path = *engine;
  }
  if (!args.auth_token_file.empty()) {
    std::ifstream in(args.auth_token_file);
    if (!in || !std::getline(in, config.auth_token) || config.auth_token.empty()) {
      std::cerr << "error: --auth-token-file " << args.auth_token_file
                << ": expected the token on its first line\n";
      return 2;
    }
    while (!config.auth_token.empty() &&
           (config.auth_token.back() == '\r' || config.auth_token.back() == ' '))
      config.auth_token.pop_back();
  }
  config.handle_signals = true;
  auto server = server::Server::create(config);
  if (!server) {
    std::cerr << "error: " << server.status().message() << "\n";
    return 1;
  }
  std::cerr << "[voxrt] serving on ws://" << config.host << ":" << (*server)->port() << " ("
            << config.to_string() << ")\n"
            << std::flush;
  Status done = (*server)->run();
  if (!done) {
    std::cerr << "error: " << done.message() << "\n";
    return 1;
  }
  std::cerr << "[voxrt] stopped\n";
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "serve", "Streaming recognition server: WebSocket (Vosk protocol) and HTTP on one port");
  cmd->footer(
      "WebSocket: send {\"config\": {\"sample_rate\": 16000, \"words\": true}}, binary PCM16 mono\n"
      "frames of any size, then {\"eof\": 1}; every frame is answered with {\"partial\": ...} or\n"
      "{\"text\": ..., \"result\": [...]}. HTTP: GET /healthz /readyz /metrics, POST\n"
      "/v1/audio/transcriptions (multipart: file, model, response_format). SIGINT/SIGTERM drain\n"
      "live streams (their finals are sent) before exit. See docs/server.md.\n"
      "Example:\n  voxrt serve --engine default.engine --port 2700 --max-streams 64");
  auto& c = args->config;
  cmd->add_option("--engine", args->engine, "Engine of a ctc_streaming model")->required();
  cmd->add_option("--host", c.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", c.port, "Port (0: any free port)")->capture_default_str();
  cmd->add_option("--devices", args->devices,
                  "Compute workers: auto (one, where the engine was built for), cpu, cpu,cpu "
                  "(several CPU workers) or GPU ordinals 0,1,... (one engine instance per GPU; "
                  "the engine must be built with --device cuda)")
      ->capture_default_str();
  cmd->add_option("--max-streams", c.recognizer.max_streams,
                  "Concurrent streams (engine state slots); more are refused")
      ->capture_default_str();
  cmd->add_option("--max-batch", c.recognizer.max_batch,
                  "Streams per engine call (at most the engine profile's batch)")
      ->capture_default_str();
  cmd->add_option("--max-queue-delay-us", c.max_queue_delay_us,
                  "Wait up to this long for more ready streams when a batch is not full")
      ->capture_default_str();
  cmd->add_option("--decoder", args->decoder, "greedy | beam (beam: phrase_list hotwords)")
      ->capture_default_str();
  cmd->add_option("--beam", args->beam_width, "Beam width")->capture_default_str();
  cmd->add_option("--vad", args->vad, "silero | energy | off")->capture_default_str();
  cmd->add_option("--vad-model", args->vad_model,
                  "Silero VAD v5 .onnx (built once into ~/.cache/voxrt) or engine");
  cmd->add_option("--auth-token-file", args->auth_token_file,
                  "File whose first line is the bearer token clients must send")
      ->check(CLI::ExistingFile);
  cmd->add_option("--threads", c.io_threads, "Network I/O threads")->capture_default_str();
  cmd->add_option("--front-end-threads", c.front_end_threads,
                  "Threads for the per-stream work of the compute worker (resampling, VAD, "
                  "features, replies); the engine call stays one batched call")
      ->capture_default_str();
  cmd->add_option("--engine-threads", c.recognizer.threads, "Kernel threads of the compute worker")
      ->capture_default_str();
  cmd->add_option("--max-message-bytes", c.max_message_bytes,
                  "Largest WebSocket message; larger closes the stream (1009)")
      ->capture_default_str();
  cmd->add_option("--max-buffered-ms", c.max_buffered_ms,
                  "Audio a stream may queue ahead of the model before reading pauses")
      ->capture_default_str();
  cmd->add_option("--idle-timeout-s", c.idle_timeout_s, "Close connections silent this long")
      ->capture_default_str();
  cmd->add_option("--max-connections-per-ip", c.max_connections_per_ip,
                  "Open connections per client address")
      ->capture_default_str();
  cmd->add_option("--max-upload-bytes", c.max_upload_bytes,
                  "Largest POST /v1/audio/transcriptions body")
      ->capture_default_str();
  cmd->callback([args, &exit_code] { exit_code = run_serve(*args); });
}

}  // namespace voxrt::cli
