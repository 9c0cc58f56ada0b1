// One WebSocket connection is one recognition stream (Vosk protocol, docs/server.md). The
// session parses and validates what the client sends and queues it for the stream's compute
// worker; replies come back through StreamSink and are written in order. Limits that protect
// the other streams live here: message size, a bounded reply queue (a client that never reads
// is dropped, not buffered), an idle timer that client pings keep alive and that ends the
// stream with its final, and protocol errors counted as such (docs/security.md).
#pragma once

#include <memory>

#include <boost/asio/ip/tcp.hpp>

#include "server/connection_limits.h"
#include "server/http_messages.h"
#include "server/server_shared.h"

namespace voxrt::server {

// Takes over an upgraded connection whose upgrade request has been read (and authorized).
void start_websocket_session(boost::asio::ip::tcp::socket socket, ServerShared& shared,
                             std::shared_ptr<ConnectionLimits::Ticket> ticket,
                             HttpRequest upgrade_request);

}  // namespace voxrt::server
