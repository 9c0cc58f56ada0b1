// Settings of `voxrt serve`: the recognizer it runs, where it listens, and the limits that keep one
// client from hurting the others (docs/server.md). Validates and prints itself (STYLE.md 12).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stream/recognizer.h"

namespace voxrt::server {

// Where one compute worker runs: the CPU or CUDA device `ordinal`. Each worker has its own engine
// instance, slot pool and thread; streams go to the least loaded one.
struct ComputeDevice {
  bool cuda = false;
  int ordinal = 0;
  std::string to_string() const { return cuda ? "cuda:" + std::to_string(ordinal) : "cpu"; }
};

// `--devices`: "auto" (empty list: one worker where the engine was built for, the CPU or the
// current GPU), "cpu", "cpu,cpu,..." (one CPU worker per entry) or GPU ordinals "0,1,...". A GPU
// listed twice gets two workers (two engine instances, like Triton's instance groups), so one
// worker thread and its command queue stop being the limit before the GPU is.
Expected<std::vector<ComputeDevice>> parse_devices(std::string_view text);

// `--auth-token-file`: the token on the file's first line, surrounding white space removed.
// Refused when the line is empty or holds only white space (that once turned authentication off
// silently), or when the token contains white space or control characters.
Expected<std::string> read_auth_token_file(const std::string& path);

struct ServerConfig {
  // Engine, decoder, max_streams (= state slots), max_batch (streams per engine call), threads
  // (kernel threads of the one compute worker).
  stream::RecognizerConfig recognizer;
  // One compute worker per entry (empty: one, on the engine's own device). max_streams is split
  // evenly between them.
  std::vector<ComputeDevice> devices;
  std::string host = "127.0.0.1";
  // 0: the system picks a free port (Server::port() tells which).
  int port = 8080;
  // Network I/O threads (parsing, validation, WebSocket and HTTP); compute runs on its own thread.
  int io_threads = 1;
  // Threads that share the compute worker's per-stream work each round (resampling, VAD, log-mel
  // features, replies); the engine call is still one batched call. 1: all on the worker thread.
  // With a GPU engine and hundreds of streams this front end, not the GPU, is the limit.
  int front_end_threads = 1;
  // With fewer than max_batch streams ready, wait up to this long for more before running.
  long long max_queue_delay_us = 0;
  // Empty: no authentication. Otherwise clients send "Authorization: Bearer <token>".
  std::string auth_token;
  // Largest WebSocket message (one PCM frame or one JSON text); larger ones close the stream
  // (1009).
  std::size_t max_message_bytes = 1 << 20;
  // Audio a stream may have queued ahead of the model; beyond it the server stops reading from
  // that client (TCP back-pressure) until the queue drains to half, and says so in a reply.
  int max_buffered_ms = 10000;
  // A WebSocket that sends nothing for this long is closed.
  int idle_timeout_s = 30;
  int max_connections_per_ip = 64;
  // Largest POST /v1/audio/transcriptions body.
  std::size_t max_upload_bytes = 25u << 20;
  // Audio taken from one stream's queue per worker round, so a fast client cannot starve others.
  int max_feed_ms_per_round = 1280;
  // Longest decoded duration of one upload. Uploads are decoded piece by piece, so this bounds
  // compute time, not memory; a header that declares more is refused before decoding (413).
  int max_upload_audio_s = 3600;
  // Threads that decode uploads and feed them to the compute workers, so decoding never runs on
  // (and stalls) a network thread.
  int upload_threads = 2;
  // Uploads being decoded or waiting for an upload thread; more are refused (503, max_uploads).
  int max_pending_uploads = 16;
  // Replies a WebSocket may have waiting for a client that does not read them; beyond this the
  // connection is dropped (slow_reader) instead of growing the queue.
  std::size_t max_reply_queue_bytes = 1u << 20;
  // glibc's mmap threshold, fixed at startup (server/malloc_tuning.h says why): blocks of at
  // least this many KiB get their own mapping, returned to the system when freed. 0: glibc's
  // dynamic threshold (which kept 44-52 MB of the compute worker's freed buffers resident).
  int malloc_mmap_threshold_kib = 128;
  // Open TCP connections in all (WebSocket and HTTP); beyond it new connections are closed at
  // accept. 0: derived from the process's file-descriptor limit (Server::create raises the soft
  // limit to the hard one and keeps a reserve).
  int max_connections = 0;
  // Time a client has to send a complete HTTP request header (slow-header clients).
  int header_timeout_s = 10;
  // On SIGINT/SIGTERM: live streams get this long to receive their finals; uploads in flight are
  // cancelled (503, shutting_down) at once so they do not hold the finals back. Streams still open
  // at the deadline are closed with 1001. Below an orchestrator's usual 30 s grace period.
  int drain_timeout_s = 20;
  // --max-streams auto: derive max_streams from a timing of the engine on this machine (CPU
  // engines) instead of taking recognizer.max_streams as it is. Server::create applies it.
  bool derive_max_streams = false;

  // ---- a model repository instead of one engine (docs/model_repository.md) ----
  // Non-empty: serve the ready versions of the repository's models (recognizer.engine_path is
  // then filled per version) and pick up newly published ones without a restart.
  std::string repo_path;
  // Which target's engines to serve: cpu | cuda.
  std::string repo_target = "cpu";
  // The model a WebSocket on a path other than /models/NAME, or an upload without a known
  // `model`, gets. Empty: "default" if the repository has it, else its first model.
  std::string default_model;
  // 1..99: new streams of a model go to its newest ready version with this probability and to
  // the previous one otherwise (both stay loaded). 0: all go to the newest.
  int canary_percent = 0;
  // How often the repository is read for newly published or rolled back versions.
  int repo_poll_ms = 2000;
  // A version whose streams end in engine errors this often (at least 5 of them, over 10 % of
  // its streams) is retired and the previous ready version serves again.
  double max_engine_error_rate = 0.1;
  // Labels of this engine in the per-version metrics (set by the model router).
  std::string model_label = "default";
  std::string version_label = "engine";
  // Stop gracefully on SIGINT/SIGTERM (the CLI sets it; tests call Server::shutdown()).
  bool handle_signals = false;

  Status validate() const;
  std::string to_string() const;
};

}  // namespace voxrt::server
