// What every session of the server needs (owned by Server::Impl, which outlives every session).
#pragma once

#include <atomic>
#include <memory>

#include "server/connection_limits.h"
#include "server/http_messages.h"
#include "server/model_router.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "server/upload_pool.h"

namespace voxrt::server {

struct ServerShared {
  ServerConfig config;
  std::shared_ptr<ServerMetrics> metrics;
  std::unique_ptr<ModelRouter> models;
  std::unique_ptr<UploadPool> uploads;
  std::unique_ptr<ConnectionLimits> connections;
  std::atomic<int> websockets{0};

  bool authorized(const HttpRequest& request) const {
    const auto header = request[boost::beast::http::field::authorization];
    return bearer_token_matches(std::string_view(header.data(), header.size()), config.auth_token);
  }
};

}  // namespace voxrt::server
