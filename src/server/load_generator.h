// voxrt loadgen: N concurrent WebSocket clients (Vosk protocol) streaming WAV files in 20 ms
// frames, measuring what a client sees: per-frame reply latency, first-partial latency, final
// latency, refusals, errors, and the WER of the finals where FILE.txt references exist.
// Loopback targets only: this is a benchmark tool, not a traffic generator for other hosts.
#pragma once

#include <string>
#include <vector>

#include "decode/word_error_rate.h"
#include "voxrt/status.h"

namespace voxrt::server {

struct LoadGenConfig {
  std::string url = "ws://127.0.0.1:8080/";
  int streams = 1;
  // WAV files to stream (streams take them round-robin); run_load_generator fills it from wav_dir.
  std::string wav_dir;
  std::vector<std::string> files;
  // Send frames on a real-time clock (open loop); otherwise each frame waits for the previous
  // frame's reply (closed loop, as fast as the server answers).
  bool realtime = false;
  // > 0: streams keep starting new files until this many seconds have passed, then send eof.
  double duration_s = 0;
  int chunk_ms = 20;
  std::string auth_token;
  int threads = 1;
  // Longest wait for the finals after eof before a stream counts as an error.
  double final_timeout_s = 30;

  Status validate() const;
};

struct LatencySummary {
  std::size_t count = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
};

struct StreamOutcome {
  std::string file;
  std::string text;   // finals joined by spaces
  std::string error;  // empty when the stream ended normally
  bool refused = false;
  bool whole = false;  // the whole file was sent (not cut by --duration)
};

struct LoadGenReport {
  int streams = 0;
  int sessions = 0;  // WebSocket sessions started (several per stream with --duration)
  int completed = 0;
  int refused = 0;
  int errors = 0;
  double audio_s = 0;
  double wall_s = 0;
  LatencySummary chunk_latency, first_partial_latency, final_latency;
  long long reference_words = 0;
  long long word_errors = 0;  // substitutions + deletions + insertions
  std::vector<StreamOutcome> outcomes;

  std::string to_json() const;
  std::string to_text() const;
};

// ws://HOST:PORT[/path] with HOST a loopback address (127.0.0.0/8, ::1, localhost).
struct WsTarget {
  std::string host;
  int port = 0;
  std::string path = "/";
};
Expected<WsTarget> parse_loopback_url(const std::string& url);

// WER helpers, for the report and its users.
using decode::normalize_words;
using decode::word_edit_distance;

Expected<LoadGenReport> run_load_generator(LoadGenConfig config);

}  // namespace voxrt::server
