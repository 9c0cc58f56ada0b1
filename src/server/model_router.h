// Which engine a new stream runs on (docs/model_repository.md). With one --engine there is one
// model ("default") with one version; with --repo every model of the repository has its newest
// ready version loaded (and, with --canary, the one before it), each with its own compute workers
// (WorkerPool). A newly published version is loaded and warmed beside the old one; new streams
// go to it; streams already open stay on the version they started on; the old version is freed
// once its last stream has ended. A version that fails to load or warm up is never served, and
// one whose streams end in engine errors too often is retired, so the previous version serves
// again. The repository is read every --repo-poll-ms and on POST /admin/reload.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "server/model_repository.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/worker_pool.h"

namespace voxrt::server {

class ModelRouter {
 public:
  // Single engine (config.repo_path empty) or repository mode. Fails when no model can serve.
  static Expected<std::unique_ptr<ModelRouter>> create(const ServerConfig& config,
                                                       std::shared_ptr<ServerMetrics> metrics);
  ~ModelRouter();
  ModelRouter(const ModelRouter&) = delete;
  ModelRouter& operator=(const ModelRouter&) = delete;

  struct Admission {
    std::shared_ptr<WorkerPool> pool;  // every later call for the stream goes here
    StreamId id = 0;
    std::string model;
    int version = 0;
  };
  // `model`: empty for the default model. not_found for a model the server does not have,
  // resource_exhausted / failed_precondition as WorkerPool::admit.
  Expected<Admission> admit(const std::string& model, std::shared_ptr<StreamSink> sink);
  // Reads the repository now and applies what changed (loads, retires); returns a summary. Also
  // frees retired versions whose streams have all ended. No-op summary in single-engine mode.
  std::string reload();

  // Graceful shutdown of every loaded version (ComputeWorker::drain_and_stop).
  void drain_and_stop(std::chrono::milliseconds timeout);
  bool draining() const { return draining_.load(); }
  int admitted_streams() const;
  int slots_in_use() const;
  int max_streams() const;
  // Every model has a version taking streams and the server is not draining.
  bool ready() const;
  // {"models": {NAME: {"serving": [versions], "draining": [versions]}}, "failed": [...]}
  std::string describe_json() const;
  // Loaded versions of `model` that take new streams, newest first (for tests).
  std::vector<int> serving_versions(const std::string& model) const;
  // Loaded versions in all, serving or draining (for tests: retired ones are freed).
  int loaded_versions() const;

 private:
  struct Version {
    std::string model;
    int version = 0;
    std::shared_ptr<WorkerPool> pool;
    bool serving = true;
  };
  struct Model {
    std::vector<std::shared_ptr<Version>> serving;  // newest first
    long long admissions = 0;                       // for the canary split
  };

  ModelRouter(const ServerConfig& config, std::shared_ptr<ServerMetrics> metrics)
      : config_(config), metrics_(std::move(metrics)) {}
  Expected<std::shared_ptr<Version>> load(const std::string& model, int version,
                                          const std::string& engine_path);
  // Under mutex_: the model a request names, or the default one.
  Model* find_model(const std::string& name);
  // Under mutex_.
  void retire(const std::shared_ptr<Version>& version);
  void mark_failed(const std::string& model, int version);
  bool has_failed(const std::string& model, int version) const;
  void free_drained_versions();
  void watch();

  const ServerConfig config_;
  std::shared_ptr<ServerMetrics> metrics_;
  std::unique_ptr<ModelRepository> repository_;
  std::string target_;
  std::string default_model_;
  mutable std::mutex mutex_;
  std::map<std::string, Model> models_;
  std::vector<std::shared_ptr<Version>> retiring_;
  // (model, version) pairs that failed to load, warm up or serve: not tried again (under mutex_).
  std::set<std::pair<std::string, int>> failed_;
  std::mutex reload_mutex_;  // one reload at a time (watcher and admin requests)
  std::atomic<bool> draining_{false};
  std::mutex watch_mutex_;
  std::condition_variable watch_wake_;
  bool stop_watching_ = false;
  std::thread watcher_;
};

}  // namespace voxrt::server
