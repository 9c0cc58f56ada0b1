// One HTTP connection: health, readiness, metrics, uploads and the WebSocket upgrade
// (docs/server.md). The request header is read first, with its own time limit, and everything
// that can be decided from it is decided before any body is read: authentication (401), size
// (413), method (405), and whether an upload can be taken at all (503). Malformed requests get
// 400, oversized headers 431 (docs/security.md).
#pragma once

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "server/connection_limits.h"
#include "server/server_shared.h"

namespace voxrt::server {

void start_http_session(boost::asio::ip::tcp::socket socket, ServerShared& shared,
                        std::shared_ptr<ConnectionLimits::Ticket> ticket);

}  // namespace voxrt::server
