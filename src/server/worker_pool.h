// The server's compute workers: one per `--devices` entry (one per GPU, or several on the CPU),
// each with its own engine instance, state slot pool and thread. A new stream goes to the worker
// with the fewest streams; from then on every command of that stream goes to the same worker.
// The stream ids handed out encode the worker (id = local id * workers + index), so the network
// side keeps one id per stream and no table.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "server/compute_worker.h"

namespace voxrt::server {

class WorkerPool {
 public:
  // max_streams (config.recognizer.max_streams) is the server's total, split evenly.
  static Expected<std::unique_ptr<WorkerPool>> create(const ServerConfig& config,
                                                      std::shared_ptr<ServerMetrics> metrics);

  // ComputeWorker's network-side interface, routed by stream id.
  Expected<StreamId> admit(std::shared_ptr<StreamSink> sink);
  void configure(StreamId id, StreamSettings settings);
  bool push_audio(StreamId id, std::vector<float> samples, Clock::time_point received);
  void finish(StreamId id, Clock::time_point received, std::string close_reason = "eof");
  void cancel(StreamId id);
  // Drains every worker at once (finals sent), then stops them; streams still open after
  // `timeout` are closed without a final (ComputeWorker::drain_and_stop). Blocks until done.
  void drain_and_stop(std::chrono::milliseconds timeout = std::chrono::hours(1));

  bool draining() const;
  int admitted_streams() const;
  int slots_in_use() const;
  long long streams_admitted_total() const;
  long long engine_errors() const;
  int max_streams() const { return max_streams_; }
  const std::vector<std::unique_ptr<ComputeWorker>>& workers() const { return workers_; }

 private:
  WorkerPool() = default;
  ComputeWorker& route(StreamId id, StreamId& local) const;

  std::vector<std::unique_ptr<ComputeWorker>> workers_;
  int max_streams_ = 0;
  std::mutex admit_mutex_;  // picking the least loaded worker and reserving there is one step
};

}  // namespace voxrt::server
