#include "server/server_metrics.h"

#include <map>
#include <sstream>

#include <prometheus/text_serializer.h>

#include "server/malloc_stats.h"

namespace voxrt::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;
using prometheus::Histogram;

// Window of the chunks-per-second gauge.
constexpr std::chrono::seconds kRateWindow{10};

Histogram::BucketBoundaries latency_buckets() {
  return {0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0};
}

prometheus::Gauge& gauge(prometheus::Registry& registry, const char* name, const char* help) {
  return BuildGauge().Name(name).Help(help).Register(registry).Add({});
}
prometheus::Counter& counter(prometheus::Registry& registry, const char* name, const char* help) {
  return BuildCounter().Name(name).Help(help).Register(registry).Add({});
}
prometheus::Histogram& histogram(prometheus::Registry& registry, const char* name, const char* help,
                                 Histogram::BucketBoundaries buckets) {
  return BuildHistogram().Name(name).Help(help).Register(registry).Add({}, std::move(buckets));
}

}  // namespace

ServerMetrics::ServerMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      active_streams(gauge(*registry_, "voxrt_active_streams", "Streams admitted and not closed")),
      websocket_connections(
          gauge(*registry_, "voxrt_websocket_connections", "Open WebSocket connections")),
      tcp_connections(gauge(*registry_, "voxrt_tcp_connections",
                            "Open TCP connections (WebSocket, HTTP, and ones being refused)")),
      tcp_connections_capacity(gauge(*registry_, "voxrt_tcp_connections_capacity",
                                     "Most TCP connections the server keeps open at once")),
      uploads_in_flight(gauge(*registry_, "voxrt_uploads_in_flight",
                              "Uploads being decoded and recognised, or waiting for a thread")),
      slots_in_use(gauge(*registry_, "voxrt_state_slots_in_use", "Engine state slots in use")),
      slots_capacity(gauge(*registry_, "voxrt_state_slots_capacity", "Engine state slots")),
      chunks_per_second(gauge(*registry_, "voxrt_chunks_per_second",
                              "Model chunks run per second over the last 10 s")),
      malloc_in_use_bytes(gauge(*registry_, "voxrt_malloc_in_use_bytes",
                                "Bytes allocated with malloc and not freed (glibc's mallinfo2)")),
      malloc_free_bytes(gauge(*registry_, "voxrt_malloc_free_bytes",
                              "Free bytes malloc keeps in its heaps instead of returning them")),
      malloc_mmapped_bytes(gauge(*registry_, "voxrt_malloc_mmapped_bytes",
                                 "Bytes of allocations malloc gave their own mappings")),
      malloc_arenas(gauge(*registry_, "voxrt_malloc_arenas",
                          "malloc arenas (the main one and one per thread, up to 8 per core)")),
      chunks_total(counter(*registry_, "voxrt_chunks_total", "Model chunks run")),
      engine_calls_total(counter(*registry_, "voxrt_engine_calls_total", "Batched engine calls")),
      audio_seconds_total(
          counter(*registry_, "voxrt_audio_seconds_total", "Seconds of audio received")),
      batch_size(histogram(*registry_, "voxrt_batch_size", "Streams per engine call",
                           {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048})),
      queue_delay_seconds(histogram(*registry_, "voxrt_queue_delay_seconds",
                                    "Audio frame received to the start of its engine round",
                                    latency_buckets())),
      engine_seconds(histogram(*registry_, "voxrt_engine_seconds",
                               "Time of one worker round's Recognizer::advance (all its batches)",
                               latency_buckets())),
      reply_latency_seconds(histogram(*registry_, "voxrt_reply_latency_seconds",
                                      "Audio frame received to its reply queued for sending",
                                      latency_buckets())),
      first_partial_latency_seconds(
          histogram(*registry_, "voxrt_first_partial_latency_seconds",
                    "Frame received to the reply carrying an utterance's first non-empty partial",
                    latency_buckets())),
      final_latency_seconds(histogram(
          *registry_, "voxrt_final_latency_seconds",
          "Endpoint (last frame of the utterance, or eof) received to its final result queued",
          latency_buckets())),
      refusals_(BuildCounter()
                    .Name("voxrt_refusals_total")
                    .Help("Requests refused on purpose, by kind")
                    .Register(*registry_)),
      errors_(BuildCounter()
                  .Name("voxrt_stream_errors_total")
                  .Help("Streams or requests that ended with an error, by kind")
                  .Register(*registry_)),
      accept_errors_(BuildCounter()
                         .Name("voxrt_accept_errors_total")
                         .Help("accept() failures, by kind (descriptors: out of file descriptors)")
                         .Register(*registry_)),
      version_streams_(BuildCounter()
                           .Name("voxrt_model_streams_total")
                           .Help("Streams admitted, by model version")
                           .Register(*registry_)),
      version_active_(BuildGauge()
                          .Name("voxrt_model_active_streams")
                          .Help("Streams open, by model version")
                          .Register(*registry_)),
      version_engine_errors_(BuildCounter()
                                 .Name("voxrt_model_engine_errors_total")
                                 .Help("Streams ended by an engine error, by model version")
                                 .Register(*registry_)),
      version_latency_(BuildHistogram()
                           .Name("voxrt_model_reply_latency_seconds")
                           .Help("Audio frame received to its reply queued, by model version")
                           .Register(*registry_)),
      version_serving_(BuildGauge()
                           .Name("voxrt_model_version_serving")
                           .Help("1 while a loaded model version takes new streams, 0 while it "
                                 "drains")
                           .Register(*registry_)),
      version_failures_(BuildCounter()
                            .Name("voxrt_model_version_failures_total")
                            .Help("Model versions refused: load, warm_up or live_errors")
                            .Register(*registry_)) {}

ServerMetrics::VersionMetrics ServerMetrics::version_metrics(const std::string& model,
                                                             const std::string& version) {
  const std::map<std::string, std::string> labels = {{"model", model}, {"version", version}};
  return VersionMetrics{
      version_streams_.Add(labels), version_active_.Add(labels), version_engine_errors_.Add(labels),
      version_latency_.Add(labels, latency_buckets()), version_serving_.Add(labels)};
}

void ServerMetrics::count_version_failure(const std::string& model, const std::string& version,
                                          std::string_view kind) {
  version_failures_.Add({{"model", model}, {"version", version}, {"kind", std::string(kind)}})
      .Increment();
}

void ServerMetrics::count_refusal(std::string_view kind) {
  refusals_.Add({{"kind", std::string(kind)}}).Increment();
}

void ServerMetrics::count_error(std::string_view kind) {
  errors_.Add({{"kind", std::string(kind)}}).Increment();
}

void ServerMetrics::count_accept_error(std::string_view kind) {
  accept_errors_.Add({{"kind", std::string(kind)}}).Increment();
}

void ServerMetrics::count_chunks(long long chunks) {
  chunks_total.Increment(static_cast<double>(chunks));
  std::lock_guard lock(rate_mutex_);
  recent_chunks_.emplace_back(std::chrono::steady_clock::now(), chunks);
}

std::string ServerMetrics::serialize() {
  {
    std::lock_guard lock(rate_mutex_);
    const auto cutoff = std::chrono::steady_clock::now() - kRateWindow;
    while (!recent_chunks_.empty() && recent_chunks_.front().first < cutoff)
      recent_chunks_.pop_front();
    long long sum = 0;
    for (const auto& entry : recent_chunks_) sum += entry.second;
    chunks_per_second.Set(static_cast<double>(sum) / static_cast<double>(kRateWindow.count()));
  }
  if (const MallocStats heap = read_malloc_stats(); heap.available) {
    malloc_in_use_bytes.Set(static_cast<double>(heap.in_use_bytes));
    malloc_free_bytes.Set(static_cast<double>(heap.free_bytes));
    malloc_mmapped_bytes.Set(static_cast<double>(heap.mmapped_bytes));
    malloc_arenas.Set(static_cast<double>(heap.arenas));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace voxrt::server
