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
  // Stop gracefully on SIGINT/SIGTERM (the CLI sets it; tests call Server::shutdown()).
  bool handle_signals = false;

  Status validate() const;
  std::string to_string() const;
};

}  // namespace voxrt::server
