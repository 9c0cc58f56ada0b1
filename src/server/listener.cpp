#include "server/listener.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>

#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/http_session.h"

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// After an accept() failure for lack of descriptors, the next try waits this long.
constexpr std::chrono::milliseconds kDescriptorPause{50};
// A refused connection gets this long to take its 429 before it is closed.
constexpr std::chrono::seconds kRefusalTime{2};

int open_reserve_descriptor() {
  return ::open("/dev/null", O_RDONLY | O_CLOEXEC);
}

// Writes a fixed 429 to a connection over the per-address limit without reading its request,
// then half-closes and waits (bounded) for the client to close, so the answer is not lost to a
// reset.
class AddressRefusal : public std::enable_shared_from_this<AddressRefusal> {
 public:
  AddressRefusal(tcp::socket socket, std::shared_ptr<ConnectionLimits::Ticket> ticket)
      : stream_(std::move(socket)), ticket_(std::move(ticket)) {}

  void run() {
    stream_.expires_after(kRefusalTime);
    net::async_write(stream_, net::buffer(response()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return;
                       beast::error_code ignored;
                       self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                       self->drain();
                     });
  }

 private:
  static const std::string& response() {
    static const std::string text = [] {
      const std::string body =
          R"({"error":"too many connections from this address","kind":"max_connections_per_ip"})"
          "\n";
      return "HTTP/1.1 429 Too Many Requests\r\nServer: voxrt\r\nContent-Type: "
             "application/json\r\nConnection: close\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    return text;
  }
  void drain() {
    stream_.async_read_some(net::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) self->drain();
                            });
  }

  beast::tcp_stream stream_;
  std::shared_ptr<ConnectionLimits::Ticket> ticket_;
  std::array<char, 512> discard_{};
};

}  // namespace

Listener::Listener(IoContextPool& pool, ServerShared& shared)
    : pool_(pool), acceptor_(pool.first()), pause_(pool.first()), shared_(shared) {
  reserve_fd_ = open_reserve_descriptor();
}

Listener::~Listener() {
  if (reserve_fd_ >= 0) ::close(reserve_fd_);
}

Status Listener::open(const std::string& host, int port) {
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec) return invalid_argument("serve: --host '", host, "' is not an IP address");
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
  // Synchronous accepts (shedding, below) must never block the listener's thread.
  if (!ec) acceptor_.non_blocking(true, ec);
  if (ec) return io_error("serve: cannot listen on ", host, ":", port, ": ", ec.message());
  return Status::ok();
}

void Listener::stop() {
  beast::error_code ec;
  pause_.cancel();
  acceptor_.close(ec);
}

void Listener::do_accept() {
  // Each connection lives on one of the pool's contexts (and its thread) from here on.
  acceptor_.async_accept(net::make_strand(pool_.next()),
                         beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
}

void Listener::shed_one_and_pause() {
  if (reserve_fd_ >= 0) {
    ::close(reserve_fd_);
    reserve_fd_ = -1;
  }
  beast::error_code ec;
  tcp::socket shed(pool_.first());
  acceptor_.accept(shed, ec);
  if (!ec) shed.close(ec);
  reserve_fd_ = open_reserve_descriptor();
  pause_.expires_after(kDescriptorPause);
  pause_.async_wait([self = shared_from_this()](beast::error_code wait_ec) {
    if (!wait_ec && self->acceptor_.is_open()) self->do_accept();
  });
}

void Listener::on_accept(beast::error_code ec, tcp::socket socket) {
  if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
  if (ec == net::error::no_descriptors || ec.value() == ENFILE) {
    shared_.metrics->count_accept_error("descriptors");
    return shed_one_and_pause();
  }
  if (ec) {
    shared_.metrics->count_accept_error("other");
    return do_accept();
  }
  beast::error_code ignored;
  // Replies are small and latency-bound: Nagle + the client's delayed ACK would hold each one
  // until the next frame arrives (~20 ms).
  socket.set_option(tcp::no_delay(true), ignored);
  const std::string address = socket.remote_endpoint(ignored).address().to_string();
  auto decision = shared_.connections->admit(address);
  switch (decision.admission) {
    case ConnectionLimits::Admission::kAdmitted:
      start_http_session(std::move(socket), shared_, std::move(decision.ticket));
      break;
    case ConnectionLimits::Admission::kTooManyFromAddress:
      shared_.metrics->count_refusal("max_connections_per_ip");
      std::make_shared<AddressRefusal>(std::move(socket), std::move(decision.ticket))->run();
      break;
    case ConnectionLimits::Admission::kTooManyInAll:
      shared_.metrics->count_refusal("max_connections");
      socket.close(ignored);
      break;
  }
  do_accept();
}

}  // namespace voxrt::server
