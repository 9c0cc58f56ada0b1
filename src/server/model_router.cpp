#include "server/model_router.h"

#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "server/engine_timing.h"

namespace voxrt::server {

namespace {
// A version is retired for live errors only once it has failed this many streams.
constexpr long long kMinEngineErrorsForRollback = 5;
}  // namespace

Expected<std::unique_ptr<ModelRouter>> ModelRouter::create(const ServerConfig& config,
                                                           std::shared_ptr<ServerMetrics> metrics) {
  auto router = std::unique_ptr<ModelRouter>(new ModelRouter(config, std::move(metrics)));
  if (config.repo_path.empty()) {
    router->default_model_ = config.model_label;
    auto version = std::make_shared<Version>();
    version->model = config.model_label;
    VOXRT_ASSIGN_OR_RETURN(version->pool, WorkerPool::create(config, router->metrics_));
    router->metrics_->version_metrics(config.model_label, config.version_label).serving.Set(1);
    router->models_[config.model_label].serving.push_back(std::move(version));
    return router;
  }
  router->repository_ = std::make_unique<ModelRepository>(config.repo_path);
  VOXRT_ASSIGN_OR_RETURN(
      router->target_,
      machine_target(config.repo_target == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu));
  const std::string summary = router->reload();
  {
    std::lock_guard lock(router->mutex_);
    if (router->models_.empty()) {
      return failed_precondition("serve --repo ", config.repo_path, ": no model has a version ",
                                 "ready on this machine (target ", router->target_,
                                 "); run voxrt deploy NAME --repo ", config.repo_path,
                                 summary.empty() ? "" : ". " + summary);
    }
  }
  if (!summary.empty()) std::cerr << "[voxrt] " << summary << "\n";
  router->watcher_ = std::thread([r = router.get()] { r->watch(); });
  return router;
}

ModelRouter::~ModelRouter() {
  {
    std::lock_guard lock(watch_mutex_);
    stop_watching_ = true;
  }
  watch_wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

Expected<std::shared_ptr<ModelRouter::Version>> ModelRouter::load(const std::string& model,
                                                                  int version,
                                                                  const std::string& engine_path) {
  ServerConfig config = config_;
  config.recognizer.engine_path = engine_path;
  config.model_label = model;
  config.version_label = std::to_string(version);
  auto loaded = std::make_shared<Version>();
  loaded->model = model;
  loaded->version = version;
  auto pool = WorkerPool::create(config, metrics_);
  if (!pool) {
    metrics_->count_version_failure(model, config.version_label, "load");
    return pool.status();
  }
  loaded->pool = std::move(*pool);
  // GPU engines plan and capture every batch bucket while the Recognizer is created; one timed
  // chunk here makes a CPU engine touch its weights and kernels before it takes a stream.
  auto warm = time_engine_chunks(engine_path, 1, config.recognizer.threads, 1);
  if (!warm) {
    metrics_->count_version_failure(model, config.version_label, "warm_up");
    loaded->pool->drain_and_stop(std::chrono::milliseconds(0));
    return warm.status().with_context("warm-up");
  }
  return loaded;
}

ModelRouter::Model* ModelRouter::find_model(const std::string& name) {
  auto it = models_.find(name.empty() ? default_model_ : name);
  return it == models_.end() ? nullptr : &it->second;
}

Expected<ModelRouter::Admission> ModelRouter::admit(const std::string& model,
                                                    std::shared_ptr<StreamSink> sink) {
  if (draining_.load()) return failed_precondition("the server is shutting down");
  std::lock_guard lock(mutex_);
  // A single engine serves whatever model a client names (OpenAI clients always send one).
  Model* m = find_model(repository_ ? model : std::string());
  if (!m) {
    std::string names;
    for (const auto& [name, unused] : models_) names += (names.empty() ? "" : ", ") + name;
    return not_found("no model '", model, "' (this server has: ", names, ")");
  }
  if (m->serving.empty())
    return resource_exhausted("model '", model, "' has no version ready; try again later");
  // The canary split: admission n goes to the newest version when floor((n+1)P/100) steps up,
  // so any run of 100 admissions sends exactly P of them there.
  std::size_t pick = 0;
  if (m->serving.size() >= 2 && config_.canary_percent > 0) {
    const long long n = m->admissions++;
    const bool newest =
        ((n + 1) * config_.canary_percent) / 100 > (n * config_.canary_percent) / 100;
    pick = newest ? 0 : 1;
  }
  const std::shared_ptr<Version>& version = m->serving[pick];
  VOXRT_ASSIGN_OR_RETURN(StreamId id, version->pool->admit(std::move(sink)));
  return Admission{version->pool, id, version->model, version->version};
}

void ModelRouter::mark_failed(const std::string& model, int version) {
  std::lock_guard lock(mutex_);
  failed_.insert({model, version});
}

bool ModelRouter::has_failed(const std::string& model, int version) const {
  std::lock_guard lock(mutex_);
  return failed_.count({model, version}) > 0;
}

void ModelRouter::retire(const std::shared_ptr<Version>& version) {
  version->serving = false;
  metrics_->version_metrics(version->model, std::to_string(version->version)).serving.Set(0);
  retiring_.push_back(version);
}

void ModelRouter::free_drained_versions() {
  std::vector<std::shared_ptr<Version>> drained;
  {
    std::lock_guard lock(mutex_);
    for (auto it = retiring_.begin(); it != retiring_.end();) {
      if ((*it)->pool->admitted_streams() == 0) {
        drained.push_back(std::move(*it));
        it = retiring_.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Outside the lock: stopping joins the version's worker threads.
  for (auto& version : drained) version->pool->drain_and_stop(std::chrono::milliseconds(0));
}

std::string ModelRouter::reload() {
  std::lock_guard reload_lock(reload_mutex_);
  free_drained_versions();
  if (!repository_ || draining_.load()) return "";
  std::ostringstream summary;
  auto models = repository_->models();
  if (!models) return "repository: " + models.status().message();
  const std::size_t wanted = config_.canary_percent > 0 ? 2 : 1;
  for (const std::string& name : *models) {
    // Live errors: a serving version that fails too many of its streams is not served again.
    std::vector<std::shared_ptr<Version>> current;
    {
      std::lock_guard lock(mutex_);
      if (auto it = models_.find(name); it != models_.end()) current = it->second.serving;
    }
    for (const auto& v : current) {
      const long long errors = v->pool->engine_errors();
      const long long streams = v->pool->streams_admitted_total();
      if (errors >= kMinEngineErrorsForRollback &&
          static_cast<double>(errors) > config_.max_engine_error_rate * streams) {
        mark_failed(name, v->version);
        metrics_->count_version_failure(name, std::to_string(v->version), "live_errors");
        summary << name << " version " << v->version << " retired: " << errors << " of its "
                << streams << " streams ended in engine errors. ";
      }
    }
    auto servable = repository_->servable(name, target_);
    if (!servable) continue;
    std::vector<std::shared_ptr<Version>> next;
    for (const ServableVersion& candidate : *servable) {
      if (next.size() == wanted) break;
      if (has_failed(name, candidate.version)) continue;
      auto already = std::find_if(current.begin(), current.end(),
                                  [&](const auto& v) { return v->version == candidate.version; });
      if (already != current.end()) {
        next.push_back(*already);
        continue;
      }
      auto loaded = load(name, candidate.version, candidate.engine.string());
      if (!loaded) {
        mark_failed(name, candidate.version);
        summary << name << " version " << candidate.version
                << " not served: " << loaded.status().message() << ". ";
        continue;
      }
      metrics_->version_metrics(name, std::to_string(candidate.version)).serving.Set(1);
      summary << name << " version " << candidate.version << " loaded. ";
      next.push_back(std::move(*loaded));
    }
    std::lock_guard lock(mutex_);
    Model& model = models_[name];
    for (const auto& old : model.serving) {
      if (std::find(next.begin(), next.end(), old) == next.end()) {
        retire(old);
        summary << name << " version " << old->version << " drains. ";
      }
    }
    model.serving = std::move(next);
    if (model.serving.empty()) models_.erase(name);
  }
  {
    // Models gone from the repository drain too.
    std::lock_guard lock(mutex_);
    for (auto it = models_.begin(); it != models_.end();) {
      if (std::find(models->begin(), models->end(), it->first) == models->end()) {
        for (const auto& v : it->second.serving) retire(v);
        it = models_.erase(it);
      } else {
        ++it;
      }
    }
    default_model_ = config_.default_model;
    if (default_model_.empty())
      default_model_ =
          models_.count("default") || models_.empty() ? "default" : models_.begin()->first;
  }
  free_drained_versions();
  return summary.str();
}

void ModelRouter::watch() {
  for (;;) {
    {
      std::unique_lock lock(watch_mutex_);
      watch_wake_.wait_for(lock, std::chrono::milliseconds(config_.repo_poll_ms),
                           [&] { return stop_watching_; });
      if (stop_watching_) return;
    }
    const std::string changed = reload();
    if (!changed.empty()) std::cerr << "[voxrt] " << changed << "\n";
  }
}

void ModelRouter::drain_and_stop(std::chrono::milliseconds timeout) {
  draining_.store(true);
  {
    std::lock_guard lock(watch_mutex_);
    stop_watching_ = true;
  }
  watch_wake_.notify_all();
  std::vector<std::shared_ptr<Version>> all;
  {
    std::lock_guard lock(mutex_);
    for (const auto& [name, model] : models_)
      all.insert(all.end(), model.serving.begin(), model.serving.end());
    all.insert(all.end(), retiring_.begin(), retiring_.end());
  }
  std::vector<std::thread> drains;
  for (auto& v : all) drains.emplace_back([v, timeout] { v->pool->drain_and_stop(timeout); });
  for (auto& t : drains) t.join();
}

int ModelRouter::admitted_streams() const {
  std::lock_guard lock(mutex_);
  int total = 0;
  for (const auto& [name, model] : models_)
    for (const auto& v : model.serving) total += v->pool->admitted_streams();
  for (const auto& v : retiring_) total += v->pool->admitted_streams();
  return total;
}

int ModelRouter::slots_in_use() const {
  std::lock_guard lock(mutex_);
  int total = 0;
  for (const auto& [name, model] : models_)
    for (const auto& v : model.serving) total += v->pool->slots_in_use();
  for (const auto& v : retiring_) total += v->pool->slots_in_use();
  return total;
}

int ModelRouter::max_streams() const {
  std::lock_guard lock(mutex_);
  int total = 0;
  for (const auto& [name, model] : models_)
    for (const auto& v : model.serving) total += v->pool->max_streams();
  return total;
}

bool ModelRouter::ready() const {
  if (draining_.load()) return false;
  std::lock_guard lock(mutex_);
  if (models_.empty()) return false;
  for (const auto& [name, model] : models_) {
    bool room = false;
    for (const auto& v : model.serving)
      room = room || v->pool->admitted_streams() < v->pool->max_streams();
    if (!room) return false;
  }
  return true;
}

std::string ModelRouter::describe_json() const {
  nlohmann::json out = {{"models", nlohmann::json::object()}};
  std::lock_guard lock(mutex_);
  for (const auto& [name, model] : models_) {
    nlohmann::json serving = nlohmann::json::array();
    for (const auto& v : model.serving) serving.push_back(v->version);
    out["models"][name] = {{"serving", serving}, {"draining", nlohmann::json::array()}};
  }
  for (const auto& v : retiring_) {
    if (!out["models"].contains(v->model))
      out["models"][v->model] = {{"serving", nlohmann::json::array()},
                                 {"draining", nlohmann::json::array()}};
    out["models"][v->model]["draining"].push_back(v->version);
  }
  out["default_model"] = default_model_;
  out["failed"] = nlohmann::json::array();
  for (const auto& [name, version] : failed_) out["failed"].push_back({{name, version}});
  out["ready"] = !draining_.load() && !models_.empty();
  return out.dump();
}

std::vector<int> ModelRouter::serving_versions(const std::string& model) const {
  std::lock_guard lock(mutex_);
  std::vector<int> out;
  auto it = models_.find(model);
  if (it != models_.end())
    for (const auto& v : it->second.serving) out.push_back(v->version);
  return out;
}

int ModelRouter::loaded_versions() const {
  std::lock_guard lock(mutex_);
  int total = static_cast<int>(retiring_.size());
  for (const auto& [name, model] : models_) total += static_cast<int>(model.serving.size());
  return total;
}

}  // namespace voxrt::server
