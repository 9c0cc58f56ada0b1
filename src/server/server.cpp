#include "server/server.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include "server/capacity_estimate.h"
#include "server/io_context_pool.h"
#include "server/listener.h"
#include "server/malloc_tuning.h"
#include "server/server_shared.h"

namespace voxrt::server {

namespace net = boost::asio;

// How long a drained server waits for its last WebSocket closes before it stops.
constexpr std::chrono::seconds kCloseGrace{5};

// Declared after the shared state: the io_context (and every session it holds) goes first.
struct Server::Impl {
  ServerShared shared;
  IoContextPool io;
  std::shared_ptr<Listener> listener;
  std::optional<net::signal_set> signals;
  std::atomic<bool> stopping{false};
  std::mutex drain_mutex;
  std::thread drain_thread;
  std::string capacity_note;

  explicit Impl(int io_threads) : io(io_threads) {}
  ~Impl() {
    if (drain_thread.joinable()) drain_thread.join();
    // Uploads answer through the sessions' executors, and open streams hold sinks that post to
    // `io`: end both while it exists.
    shared.uploads.reset();
    if (shared.models) shared.models->drain_and_stop(std::chrono::seconds(0));
  }

  void shutdown() {
    if (stopping.exchange(true)) return;
    net::post(io.first(), [this] {
      listener->stop();
      if (signals) signals->cancel();
    });
    std::lock_guard lock(drain_mutex);
    drain_thread = std::thread([this] {
      // Uploads first (answered 503 at once), so live streams' finals are not held back.
      shared.uploads->cancel_all();
      shared.models->drain_and_stop(std::chrono::seconds(shared.config.drain_timeout_s));
      const auto deadline = Clock::now() + kCloseGrace;
      while ((shared.websockets.load() > 0 || shared.uploads->in_flight() > 0) &&
             Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      io.stop();
    });
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Expected<std::unique_ptr<Server>> Server::create(const ServerConfig& requested) {
  VOXRT_RETURN_IF_ERROR(requested.validate());
  // Before the engine and its buffers are allocated.
  VOXRT_RETURN_IF_ERROR(set_malloc_mmap_threshold(
      static_cast<std::size_t>(requested.malloc_mmap_threshold_kib) << 10));
  ServerConfig config = requested;
  std::string capacity_note;
  if (config.derive_max_streams && config.repo_path.empty()) {
    auto estimate = estimate_realtime_streams(config);
    if (estimate) {
      config.recognizer.max_streams = estimate->max_streams;
      capacity_note = estimate->explanation;
    } else {
      capacity_note = "--max-streams auto: kept " + std::to_string(config.recognizer.max_streams) +
                      " (" + estimate.status().message() + ")";
    }
    config.derive_max_streams = false;
  }
  auto impl = std::make_unique<Impl>(config.io_threads);
  impl->capacity_note = std::move(capacity_note);
  impl->shared.config = config;
  impl->shared.metrics = std::make_shared<ServerMetrics>();
  VOXRT_ASSIGN_OR_RETURN(impl->shared.models, ModelRouter::create(config, impl->shared.metrics));
  impl->shared.uploads =
      std::make_unique<UploadPool>(config, *impl->shared.models, impl->shared.metrics);
  impl->shared.connections =
      std::make_unique<ConnectionLimits>(effective_max_connections(config.max_connections),
                                         config.max_connections_per_ip, impl->shared.metrics);
  impl->listener = std::make_shared<Listener>(impl->io, impl->shared);
  VOXRT_RETURN_IF_ERROR(impl->listener->open(config.host, config.port));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::run() {
  Impl& impl = *impl_;
  if (impl.shared.config.handle_signals) {
    impl.signals.emplace(impl.io.first(), SIGINT, SIGTERM);
    impl.signals->async_wait([this](boost::system::error_code ec, int) {
      if (!ec) impl_->shutdown();
    });
  }
  impl.listener->start();
  impl.io.run("voxrt-io", /*keep_alive=*/true);
  std::lock_guard lock(impl.drain_mutex);
  if (impl.drain_thread.joinable()) impl.drain_thread.join();
  return Status::ok();
}

void Server::shutdown() {
  impl_->shutdown();
}
int Server::port() const {
  return impl_->listener->port();
}
ServerMetrics& Server::metrics() {
  return *impl_->shared.metrics;
}
int Server::active_streams() const {
  return impl_->shared.models->admitted_streams();
}
int Server::slots_in_use() const {
  return impl_->shared.models->slots_in_use();
}
int Server::max_streams() const {
  return impl_->shared.models->max_streams();
}
ModelRouter& Server::models() {
  return *impl_->shared.models;
}
int Server::max_connections() const {
  return impl_->shared.connections->max_total();
}
int Server::open_connections() const {
  return impl_->shared.connections->open();
}
int Server::uploads_in_flight() const {
  return impl_->shared.uploads->in_flight();
}
const ServerConfig& Server::config() const {
  return impl_->shared.config;
}
const std::string& Server::capacity_note() const {
  return impl_->capacity_note;
}

}  // namespace voxrt::server
