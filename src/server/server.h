// `voxrt serve`: a WebSocket (Vosk protocol) and HTTP server in front of its compute workers
// (WorkerPool: one per GPU or per CPU worker). Network I/O runs on an asio thread pool; a stream's
// compute worker thread is the only one that touches it (STYLE.md 11). docs/server.md describes the
// protocol, limits and metrics.
#pragma once

#include <memory>
#include <string>

#include "server/model_router.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "voxrt/status.h"

namespace voxrt::server {

class Server {
 public:
  // Loads the engine and binds the port (so port() is known before run()).
  static Expected<std::unique_ptr<Server>> create(const ServerConfig& config);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves until shutdown() or, with handle_signals, SIGINT/SIGTERM; returns after the drain.
  Status run();
  // Graceful and thread-safe: stop accepting, finish every live stream (finals sent), stop.
  void shutdown();

  int port() const;
  ServerMetrics& metrics();
  int active_streams() const;
  int slots_in_use() const;
  int max_streams() const;
  // Open TCP connections and the most the server keeps (ConnectionLimits).
  int open_connections() const;
  int max_connections() const;
  int uploads_in_flight() const;
  // The loaded model versions (one for --engine; the repository's for --repo).
  ModelRouter& models();
  // The settings in force (max_streams resolved when --max-streams auto was asked for).
  const ServerConfig& config() const;
  // How --max-streams auto decided (empty when it was not asked for).
  const std::string& capacity_note() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace voxrt::server
