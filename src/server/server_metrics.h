// The server's Prometheus metrics (docs/server.md lists them). Counters and histograms are
// thread-safe; GET /metrics serializes them in the text format.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace voxrt::server {

class ServerMetrics {
 private:
  // First: every metric below is registered in it during construction.
  std::shared_ptr<prometheus::Registry> registry_;

 public:
  ServerMetrics();

  // Refusals: a request the server turned away on purpose (max_streams, max_connections_per_ip,
  // unauthorized, throttled, shutting_down). Errors: a stream that ended badly (invalid_json,
  // bad_message, bad_config, message_too_big, idle_timeout, client_gone, engine, ...).
  void count_refusal(std::string_view kind);
  void count_error(std::string_view kind);
  // accept() failures by kind: descriptors (EMFILE/ENFILE: the process or system is out of file
  // descriptors), other.
  void count_accept_error(std::string_view kind);
  // Model chunks run in one worker round (feeds the chunks-per-second gauge).
  void count_chunks(long long chunks);
  std::string serialize();

  // Metrics of one model version (voxrt serve --repo; the single engine of --engine is model
  // "default", version "engine"), labelled {model, version}.
  struct VersionMetrics {
    prometheus::Counter& streams_total;
    prometheus::Gauge& active_streams;
    prometheus::Counter& engine_errors_total;
    prometheus::Histogram& reply_latency_seconds;
    prometheus::Gauge& serving;  // 1 while new streams may go to it, 0 once retired
  };
  VersionMetrics version_metrics(const std::string& model, const std::string& version);
  // A version that could not be loaded or warmed up, or was retired for errors on live traffic.
  void count_version_failure(const std::string& model, const std::string& version,
                             std::string_view kind);

  prometheus::Gauge& active_streams;
  prometheus::Gauge& websocket_connections;
  prometheus::Gauge& tcp_connections;
  prometheus::Gauge& tcp_connections_capacity;
  prometheus::Gauge& uploads_in_flight;
  prometheus::Gauge& slots_in_use;
  prometheus::Gauge& slots_capacity;
  prometheus::Gauge& chunks_per_second;
  // What glibc's malloc holds (server/malloc_stats.h), read at each serialize().
  prometheus::Gauge& malloc_in_use_bytes;
  prometheus::Gauge& malloc_free_bytes;
  prometheus::Gauge& malloc_mmapped_bytes;
  prometheus::Gauge& malloc_arenas;
  prometheus::Counter& chunks_total;
  prometheus::Counter& engine_calls_total;
  prometheus::Counter& audio_seconds_total;
  prometheus::Histogram& batch_size;
  prometheus::Histogram& queue_delay_seconds;
  prometheus::Histogram& engine_seconds;
  prometheus::Histogram& reply_latency_seconds;
  prometheus::Histogram& first_partial_latency_seconds;
  prometheus::Histogram& final_latency_seconds;

 private:
  prometheus::Family<prometheus::Counter>& refusals_;
  prometheus::Family<prometheus::Counter>& errors_;
  prometheus::Family<prometheus::Counter>& accept_errors_;
  prometheus::Family<prometheus::Counter>& version_streams_;
  prometheus::Family<prometheus::Gauge>& version_active_;
  prometheus::Family<prometheus::Counter>& version_engine_errors_;
  prometheus::Family<prometheus::Histogram>& version_latency_;
  prometheus::Family<prometheus::Gauge>& version_serving_;
  prometheus::Family<prometheus::Counter>& version_failures_;
  std::mutex rate_mutex_;
  std::deque<std::pair<std::chrono::steady_clock::time_point, long long>> recent_chunks_;
};

}  // namespace voxrt::server
