// voxrt serve: the streaming recognition server (WebSocket, Vosk protocol; HTTP health, metrics
// and OpenAI-style uploads). docs/server.md has the protocol, limits and metrics.
#include <iostream>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "front_end_models.h"
#include "server/server.h"
#include "whisper_options_args.h"

namespace voxrt::cli {
namespace {

struct ServeArgs {
  server::ServerConfig config;
  std::string engine;
  std::string devices = "auto";
  std::string decoder;        // empty: beam with --lm, else greedy
  WhisperOptionArgs whisper;  // Whisper models (RecognizerConfig::encoder_decoder)
  std::string vad = "energy";
  std::string vad_model;
  bool lexicon_only = false;
  std::string auth_token_file;
  std::string max_streams = "auto";
};

int run_serve(ServeArgs& args) {
  server::ServerConfig config = args.config;
  config.recognizer.engine_path = args.engine;
  if (args.engine.empty() == args.config.repo_path.empty()) {
    std::cerr << "error: give --engine ENGINE (one model) or --repo REPO (a model repository, "
                 "docs/model_repository.md), not both\n";
    return 2;
  }
  auto devices = server::parse_devices(args.devices);
  if (!devices) {
    std::cerr << "error: " << devices.status().message() << "\n";
    return 2;
  }
  config.devices = std::move(*devices);
  if (!args.decoder.empty() && args.decoder != "greedy" && args.decoder != "beam") {
    std::cerr << "error: --decoder '" << args.decoder << "': expected greedy or beam\n";
    return 2;
  }
  const bool has_lm = !config.recognizer.lm_path.empty();
  if (args.decoder == "greedy" && has_lm) {
    std::cerr << "error: --decoder greedy: --lm needs beam search (streams may still ask for "
                 "greedy decoding in their config)\n";
    return 2;
  }
  config.recognizer.decoder =
      args.decoder == "beam" || has_lm ? stream::DecoderKind::kBeam : stream::DecoderKind::kGreedy;
  if (args.lexicon_only) config.recognizer.decoding.lexicon_only = true;
  auto whisper = whisper_options(args.whisper);
  if (!whisper) {
    std::cerr << "error: " << whisper.status().message() << "\n";
    return 2;
  }
  config.recognizer.encoder_decoder = *whisper;
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
    auto token = server::read_auth_token_file(args.auth_token_file);
    if (!token) {
      std::cerr << "error: " << token.status().message() << "\n";
      return 2;
    }
    config.auth_token = std::move(*token);
  }
  if (args.max_streams == "auto") {
    config.derive_max_streams = true;
  } else {
    try {
      std::size_t used = 0;
      config.recognizer.max_streams = std::stoi(args.max_streams, &used);
      if (used != args.max_streams.size() || config.recognizer.max_streams < 1 ||
          config.recognizer.max_streams > 1000000)
        throw std::invalid_argument(args.max_streams);
    } catch (const std::exception&) {
      std::cerr << "error: --max-streams '" << args.max_streams
                << "': expected auto or a whole number of streams, 1..1000000\n";
      return 2;
    }
  }
  config.handle_signals = true;
  auto server = server::Server::create(config);
  if (!server) {
    std::cerr << "error: " << server.status().message() << "\n";
    return 1;
  }
  if (!(*server)->capacity_note().empty())
    std::cerr << "[voxrt] " << (*server)->capacity_note() << "\n";
  std::cerr << "[voxrt] serving on ws://" << config.host << ":" << (*server)->port() << " ("
            << (*server)->config().to_string() << ")\n"
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
      "live streams (their finals are sent, within --drain-timeout-s) before exit. Limits and\n"
      "the threat model: docs/security.md; protocol and metrics: docs/server.md.\n"
      "Examples:\n  voxrt serve --engine default.engine --port 2700 --max-streams 64\n"
      "  voxrt serve --repo models/repo --canary 10      (docs/model_repository.md)");
  auto& c = args->config;
  cmd->add_option("--engine", args->engine,
                  "Engine of a ctc_streaming model, or an engine bundle folder (voxrt build "
                  "--model-dir)");
  cmd->add_option("--repo", c.repo_path,
                  "Model repository (instead of --engine): serves each model's newest ready "
                  "version and picks up versions `voxrt deploy` publishes, without a restart");
  cmd->add_option("--repo-target", c.repo_target, "Which engines of the repository: cpu | cuda")
      ->capture_default_str();
  cmd->add_option("--default-model", c.default_model,
                  "Model for WebSocket paths other than /models/NAME and uploads without a known "
                  "model (default: 'default', else the first)");
  cmd->add_option("--canary", c.canary_percent,
                  "Percent of new streams sent to a model's newest version while the previous "
                  "one keeps the rest, 0..99 (0: all to the newest)")
      ->capture_default_str()
      ->check(CLI::Range(0, 99));
  cmd->add_option("--repo-poll-ms", c.repo_poll_ms,
                  "How often the repository is read, 100..3600000 ms")
      ->capture_default_str()
      ->check(CLI::Range(100, 3600000));
  cmd->add_option("--host", c.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", c.port, "Port, 0..65535 (0: any free port)")
      ->capture_default_str()
      ->check(CLI::Range(0, 65535));
  cmd->add_option("--devices", args->devices,
                  "Compute workers: auto (one, where the engine was built for), cpu, cpu,cpu "
                  "(several CPU workers) or GPU ordinals 0,1,... (one engine instance per GPU; "
                  "the engine must be built with --device cuda)")
      ->capture_default_str();
  cmd->add_option("--max-streams", args->max_streams,
                  "Concurrent streams (engine state slots), 1..1000000; more are refused. auto: "
                  "what this machine carries in real time with this engine, from a timing of it "
                  "at startup (CPU engines; GPU engines keep 256)")
      ->capture_default_str();
  cmd->add_option("--max-batch", c.recognizer.max_batch,
                  "Streams per engine call; above the engine profiles' largest batch is refused "
                  "(default: that batch, at most 32)")
      ->check(CLI::Range(1, 65536));
  cmd->add_option("--max-queue-delay-us", c.max_queue_delay_us,
                  "Wait up to this long for more ready streams when a batch is not full, "
                  "0..1000000")
      ->capture_default_str()
      ->check(CLI::Range(0ll, 1000000ll));
  cmd->add_option("--decoder", args->decoder,
                  "greedy | beam (beam: phrase_list hotwords; default: beam with --lm, else "
                  "greedy); a stream may choose its own in its config");
  cmd->add_option("--lm", c.recognizer.lm_path, "Word n-gram LM (ARPA) for beam search")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--lexicon-only", args->lexicon_only,
                "With --lm: only words of the LM may be spelled");
  cmd->add_option("--beam", c.recognizer.decoding.beam_width,
                  "Beam width, 1..1024 (default: the model's tuned value with an LM, else 8)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--lm-weight", c.recognizer.decoding.lm_weight,
                  "LM weight, 0..10 (default: the model's tuned value, else 0.5)")
      ->check(CLI::Range(0.0f, 10.0f));
  cmd->add_option("--word-bonus", c.recognizer.decoding.word_bonus,
                  "Bonus per word the LM scores, -20..20 (default: the model's, else 0)")
      ->check(CLI::Range(-20.0f, 20.0f));
  cmd->add_option("--hotword-bonus", c.recognizer.decoding.hotword_bonus,
                  "Bonus per matched phrase_list unit, 0..20 (default: the model's, else 1.5)")
      ->check(CLI::Range(0.0f, 20.0f));
  add_whisper_options(cmd, args->whisper);
  // Live streams' growing-window partials (RecognizerConfig::partial_interval_ms). 2000 ms: a
  // Whisper partial at most 2 s behind the audio (plus its decode), for 14 extra encoder calls per
  // 30 s window (each partial decode runs the encoder on a whole padded window).
  c.recognizer.partial_interval_ms = 2000;
  cmd->add_option("--whisper-partial-ms", c.recognizer.partial_interval_ms,
                  "Whisper models: decode a live stream's filling 30 s window again every this "
                  "many ms of audio for partial results (0: partials only per whole window)")
      ->capture_default_str()
      ->check(CLI::Range(0, 30000));
  cmd->add_option("--vad", args->vad, "silero | energy | off")->capture_default_str();
  cmd->add_option("--vad-model", args->vad_model,
                  "Silero VAD v5 .onnx (built once into ~/.cache/voxrt) or engine");
  cmd->add_option("--auth-token-file", args->auth_token_file,
                  "File whose first line is the bearer token clients must send")
      ->check(CLI::ExistingFile);
  cmd->add_option("--threads", c.io_threads, "Network I/O threads, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--front-end-threads", c.front_end_threads,
                  "Threads for the per-stream work of the compute worker (resampling, VAD, "
                  "features, replies), 1..256; the engine call stays one batched call")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--engine-threads", c.recognizer.threads,
                  "Kernel threads of the compute worker, 1..256")
      ->capture_default_str()
      ->check(CLI::Range(1, 256));
  cmd->add_option("--max-message-bytes", c.max_message_bytes,
                  "Largest WebSocket message, 1024..67108864; larger closes the stream (1009)")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{64} << 20));
  cmd->add_option("--max-buffered-ms", c.max_buffered_ms,
                  "Audio a stream may queue ahead of the model before reading pauses, "
                  "100..600000")
      ->capture_default_str()
      ->check(CLI::Range(100, 600000));
  cmd->add_option("--idle-timeout-s", c.idle_timeout_s,
                  "Close connections silent this long, 1..86400 s")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  cmd->add_option("--max-connections-per-ip", c.max_connections_per_ip,
                  "Open connections per client address, 1..1000000")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--max-upload-bytes", c.max_upload_bytes,
                  "Largest POST /v1/audio/transcriptions body, 1024..4294967296")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{1024}, std::size_t{1} << 32));
  cmd->add_option(
         "--max-upload-audio-s", c.max_upload_audio_s,
         "Longest decoded upload, 1..86400 s (uploads are decoded piece by piece; longer ones get "
         "413)")
      ->capture_default_str()
      ->check(CLI::Range(1, 86400));
  cmd->add_option("--upload-threads", c.upload_threads,
                  "Threads that decode uploads and feed them to the compute workers, 1..64")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  cmd->add_option("--max-pending-uploads", c.max_pending_uploads,
                  "Uploads in flight (decoding or waiting), 1..10000; more get 503 before their "
                  "body is read")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--max-reply-queue-bytes", c.max_reply_queue_bytes,
                  "Replies a WebSocket may have unsent (a client that does not read), "
                  "4096..268435456; beyond it the connection is dropped")
      ->capture_default_str()
      ->check(CLI::Range(std::size_t{4096}, std::size_t{256} << 20));
  cmd->add_option("--malloc-mmap-threshold-kib", c.malloc_mmap_threshold_kib,
                  "Allocations of at least this many KiB get their own mapping, returned to the "
                  "system when freed (glibc), 0..32768; 0: glibc's dynamic threshold")
      ->capture_default_str()
      ->check(CLI::Range(0, 32768));
  cmd->add_option("--max-connections", c.max_connections,
                  "Open TCP connections in all, 0..10000000 (0: from the file-descriptor limit, "
                  "raised to its maximum)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10000000));
  cmd->add_option("--header-timeout-s", c.header_timeout_s,
                  "Time a client has to send a whole HTTP request header, 1..3600 s")
      ->capture_default_str()
      ->check(CLI::Range(1, 3600));
  cmd->add_option("--drain-timeout-s", c.drain_timeout_s,
                  "On SIGINT/SIGTERM: time live streams get for their finals, 0..3600 s (uploads "
                  "are answered 503 at once); then the rest are closed with 1001")
      ->capture_default_str()
      ->check(CLI::Range(0, 3600));
  cmd->callback([args, &exit_code] { exit_code = run_serve(*args); });
}

}  // namespace voxrt::cli
