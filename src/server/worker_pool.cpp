#include "server/worker_pool.h"

#include <thread>

namespace voxrt::server {

Expected<std::unique_ptr<WorkerPool>> WorkerPool::create(const ServerConfig& config,
                                                         std::shared_ptr<ServerMetrics> metrics) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto pool = std::unique_ptr<WorkerPool>(new WorkerPool());
  pool->max_streams_ = config.recognizer.max_streams;
  if (config.devices.empty()) {
    VOXRT_ASSIGN_OR_RETURN(auto worker, ComputeWorker::create(config, metrics));
    pool->workers_.push_back(std::move(worker));
    return pool;
  }
  const int workers = static_cast<int>(config.devices.size());
  for (int w = 0; w < workers; ++w) {
    ServerConfig share = config;
    // Slots split as evenly as they go: the first (max % workers) workers take one more.
    share.recognizer.max_streams =
        config.recognizer.max_streams / workers + (w < config.recognizer.max_streams % workers);
    auto worker =
        ComputeWorker::create(share, metrics, config.devices[static_cast<std::size_t>(w)]);
    if (!worker) {
      return worker.status().with_context(
          str_cat("compute worker ", w, " (",
                  config.devices[static_cast<std::size_t>(w)].to_string(), ")"));
    }
    pool->workers_.push_back(std::move(*worker));
  }
  return pool;
}

ComputeWorker& WorkerPool::route(StreamId id, StreamId& local) const {
  const auto n = static_cast<StreamId>(workers_.size());
  local = id / n;
  return *workers_[static_cast<std::size_t>(id % n)];
}

Expected<StreamId> WorkerPool::admit(std::shared_ptr<StreamSink> sink) {
  if (workers_.size() == 1) return workers_.front()->admit(std::move(sink));
  std::lock_guard lock(admit_mutex_);
  if (draining()) return failed_precondition("the server is shutting down");
  if (admitted_streams() >= max_streams_) {
    return resource_exhausted("all ", max_streams_,
                              " streams are in use (--max-streams); try again later");
  }
  std::size_t best = 0;
  double best_load = 2.0;
  for (std::size_t w = 0; w < workers_.size(); ++w) {
    const ComputeWorker& worker = *workers_[w];
    const double load =
        static_cast<double>(worker.admitted_streams()) / static_cast<double>(worker.capacity());
    if (load < best_load) {
      best = w;
      best_load = load;
    }
  }
  VOXRT_ASSIGN_OR_RETURN(StreamId local, workers_[best]->admit(std::move(sink)));
  return local * static_cast<StreamId>(workers_.size()) + static_cast<StreamId>(best);
}

void WorkerPool::configure(StreamId id, StreamSettings settings) {
  StreamId local = 0;
  route(id, local).configure(local, std::move(settings));
}

bool WorkerPool::push_audio(StreamId id, std::vector<float> samples, Clock::time_point received) {
  StreamId local = 0;
  return route(id, local).push_audio(local, std::move(samples), received);
}

void WorkerPool::finish(StreamId id, Clock::time_point received, std::string close_reason) {
  StreamId local = 0;
  route(id, local).finish(local, received, std::move(close_reason));
}

void WorkerPool::cancel(StreamId id) {
  StreamId local = 0;
  route(id, local).cancel(local);
}

void WorkerPool::drain_and_stop(std::chrono::milliseconds timeout) {
  std::vector<std::thread> drains;
  for (auto& worker : workers_)
    drains.emplace_back([&worker, timeout] { worker->drain_and_stop(timeout); });
  for (auto& t : drains) t.join();
}

bool WorkerPool::draining() const {
  for (const auto& worker : workers_)
    if (worker->draining()) return true;
  return false;
}

int WorkerPool::admitted_streams() const {
  int total = 0;
  for (const auto& worker : workers_) total += worker->admitted_streams();
  return total;
}

int WorkerPool::slots_in_use() const {
  int total = 0;
  for (const auto& worker : workers_) total += worker->slots_in_use();
  return total;
}

long long WorkerPool::streams_admitted_total() const {
  long long total = 0;
  for (const auto& worker : workers_) total += worker->streams_admitted_total();
  return total;
}

long long WorkerPool::engine_errors() const {
  long long total = 0;
  for (const auto& worker : workers_) total += worker->engine_errors();
  return total;
}

}  // namespace voxrt::server
