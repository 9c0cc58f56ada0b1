#include "server/http_session.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/web_assets.h"
#include "server/websocket_session.h"

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// Largest header block, and largest body of a request that is not an upload.
constexpr std::size_t kMaxHeaderBytes = 16 * 1024;
constexpr std::uint64_t kMaxSmallBodyBytes = 64 * 1024;
// Time to receive an upload's body (25 MB at ~2 Mbit/s).
constexpr std::chrono::seconds kBodyTimeout{120};
// Longest lingering close (see do_close).
constexpr std::chrono::seconds kLingerTime{5};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, ServerShared& shared,
              std::shared_ptr<ConnectionLimits::Ticket> ticket)
      : stream_(std::move(socket)), shared_(shared), ticket_(std::move(ticket)) {}

  void run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::read_header, shared_from_this()));
  }

 private:
  void read_header() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    // The header stage compares Content-Length with this; the endpoint's own limit follows.
    parser_->body_limit(
        std::max<std::uint64_t>(shared_.config.max_upload_bytes, kMaxSmallBodyBytes));
    stream_.expires_after(std::chrono::seconds(shared_.config.header_timeout_s));
    http::async_read_header(stream_, buffer_, *parser_,
                            beast::bind_front_handler(&HttpSession::on_header, shared_from_this()));
  }

  // Answers and closes the connection, without reading any body.
  void refuse(http::status status, std::string_view kind, std::string_view message) {
    const auto& header = parser_->get();
    send(error_response(header.version(), false, status, kind, message));
  }

  void on_header(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return do_close();
    if (ec == beast::error::timeout) {
      // A connection idle between requests times out quietly; one that started a header and
      // did not finish it in time is a slow (or hostile) client.
      if (buffer_.size() > 0) shared_.metrics->count_error("header_timeout");
      return do_close();
    }
    if (ec == http::error::header_limit) {
      shared_.metrics->count_error("bad_http");
      return send(error_response(11, false, http::status::request_header_fields_too_large,
                                 "header_too_large", "the request header is larger than 16 KiB"));
    }
    if (ec == http::error::body_limit) {
      shared_.metrics->count_refusal("upload_too_large");
      return refuse(http::status::payload_too_large, "upload_too_large",
                    "the body is larger than the server's upload limit (--max-upload-bytes)");
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_method).category()) {
      shared_.metrics->count_error("bad_http");
      return send(error_response(11, false, http::status::bad_request, "bad_http",
                                 "malformed HTTP request: " + ec.message()));
    }
    if (ec) return do_close();

    const auto& header = parser_->get();
    if (websocket::is_upgrade(header)) {
      if (!shared_.authorized(header)) {
        shared_.metrics->count_refusal("unauthorized");
        return refuse(http::status::unauthorized, "unauthorized", "missing or wrong bearer token");
      }
      stream_.expires_never();
      start_websocket_session(stream_.release_socket(), shared_, std::move(ticket_),
                              parser_->release());
      return;
    }
    std::string_view target(header.target().data(), header.target().size());
    target = target.substr(0, target.find('?'));
    if (target == "/metrics" || target == "/v1/audio/transcriptions" || target == "/admin/reload") {
      if (!shared_.authorized(header)) {
        shared_.metrics->count_refusal("unauthorized");
        return refuse(http::status::unauthorized, "unauthorized", "missing or wrong bearer token");
      }
    }
    if (target == "/v1/audio/transcriptions") {
      if (header.method() != http::verb::post)
        return refuse(http::status::method_not_allowed, "method", "use POST");
      upload_place_ = shared_.uploads->reserve();
      if (!upload_place_) {
        const bool draining = shared_.models->draining();
        shared_.metrics->count_refusal(draining ? "shutting_down" : "max_uploads");
        return refuse(http::status::service_unavailable, draining ? "shutting_down" : "max_uploads",
                      draining ? "the server is shutting down"
                               : "too many uploads in flight (--max-pending-uploads); try again");
      }
      stream_.expires_after(kBodyTimeout);
    } else {
      const auto length = parser_->content_length();
      if ((length && *length > kMaxSmallBodyBytes) || parser_->chunked()) {
        return refuse(http::status::payload_too_large, "body_too_large",
                      "this endpoint takes no request body");
      }
    }
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpSession::on_body, shared_from_this()));
  }

  void on_body(beast::error_code ec, std::size_t) {
    if (ec == http::error::body_limit) {
      upload_place_.reset();
      shared_.metrics->count_refusal("upload_too_large");
      return refuse(http::status::payload_too_large, "upload_too_large",
                    "the body is larger than the server's upload limit (--max-upload-bytes)");
    }
    if (ec == beast::error::timeout) {
      shared_.metrics->count_error("body_timeout");
      return do_close();
    }
    if (ec && ec.category() == http::make_error_code(http::error::bad_method).category()) {
      shared_.metrics->count_error("bad_http");
      return send(error_response(11, false, http::status::bad_request, "bad_http",
                                 "malformed HTTP request: " + ec.message()));
    }
    if (ec) return do_close();
    handle(parser_->release());
  }

  void handle(HttpRequest request) {
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    const unsigned version = request.version();
    const bool keep_alive = request.keep_alive();
    const bool get = request.method() == http::verb::get;
    auto not_get = [&] {
      return send(error_response(version, keep_alive, http::status::method_not_allowed, "method",
                                 "use GET"));
    };
    if (target == "/healthz") {
      if (!get) return not_get();
      return send(make_response(version, keep_alive, http::status::ok, "ok\n"));
    }
    if (target == "/readyz") {
      if (!get) return not_get();
      // 200 while every model has a version taking streams and a free slot; the body says
      // which versions serve and which drain.
      const bool ready = shared_.models->ready();
      return send(make_response(version, keep_alive,
                                ready ? http::status::ok : http::status::service_unavailable,
                                shared_.models->describe_json() + "\n", "application/json"));
    }
    if (target == "/admin/reload") {
      if (request.method() != http::verb::post) {
        return send(error_response(version, keep_alive, http::status::method_not_allowed, "method",
                                   "use POST"));
      }
      // Without a token only this machine may ask (the repository is the operator's).
      beast::error_code ec;
      const auto peer = stream_.socket().remote_endpoint(ec).address();
      if (shared_.config.auth_token.empty() && (ec || !peer.is_loopback())) {
        return send(
            error_response(version, keep_alive, http::status::forbidden, "forbidden",
                           "POST /admin/reload without --auth-token-file is loopback only"));
      }
      const std::string changes = shared_.models->reload();
      return send(make_response(version, keep_alive, http::status::ok,
                                "{\"changes\": " + nlohmann::json(changes).dump() +
                                    ", \"state\": " + shared_.models->describe_json() + "}\n",
                                "application/json"));
    }
    if (target == "/metrics") {
      if (!get) return not_get();
      return send(make_response(version, keep_alive, http::status::ok, shared_.metrics->serialize(),
                                "text/plain; version=0.0.4; charset=utf-8"));
    }
    if (target == "/v1/audio/transcriptions") {
      // Parsed and decoded on an upload thread; the answer is posted back to this strand.
      shared_.uploads->submit(std::move(*upload_place_), std::move(request),
                              [self = shared_from_this()](HttpResponse response) {
                                self->respond_later(std::move(response));
                              });
      upload_place_.reset();
      stream_.expires_never();
      return;
    }
    // The live page (web/, compiled in): public like /healthz, it holds no data.
    if (const WebAsset* asset = get ? find_web_asset(target) : nullptr) {
      return send(make_response(version, keep_alive, http::status::ok, std::string(asset->body),
                                std::string(asset->content_type)));
    }
    send(error_response(version, keep_alive, http::status::not_found, "not_found",
                        "no such endpoint (WebSocket: any path with an Upgrade, /models/NAME for "
                        "a model of a repository; HTTP: / (the live page), /healthz, /readyz, "
                        "/metrics, POST /v1/audio/transcriptions, POST /admin/reload)"));
  }

  // Any thread: answer on this session's strand.
  void respond_later(HttpResponse response) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), r = std::move(response)]() mutable {
                self->send(std::move(r));
              });
  }

  void send(HttpResponse response) {
    auto shared_response = std::make_shared<HttpResponse>(std::move(response));
    // A client that does not read its answer does not hold the connection for ever.
    stream_.expires_after(std::chrono::seconds(shared_.config.idle_timeout_s));
    http::async_write(
        stream_, *shared_response,
        [self = shared_from_this(), shared_response](beast::error_code ec, std::size_t) {
          if (ec) return;
          if (shared_response->need_eof()) return self->do_close();
          self->read_header();
        });
  }

  // Half-closes, then reads and drops what the client still sends (the rest of a refused upload,
  // say) until it closes or kLingerTime passes: closing a socket with unread data resets the
  // connection, and the client could lose the answer just sent (nginx's lingering close).
  void do_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) return;
    discard_.resize(4096);
    stream_.expires_after(kLingerTime);
    linger();
  }
  void linger() {
    stream_.async_read_some(net::buffer(discard_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (!ec) self->linger();
                            });
  }

  beast::tcp_stream stream_;
  ServerShared& shared_;
  std::shared_ptr<ConnectionLimits::Ticket> ticket_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::optional<UploadPool::Reservation> upload_place_;
  std::vector<char> discard_;
};

}  // namespace

void start_http_session(tcp::socket socket, ServerShared& shared,
                        std::shared_ptr<ConnectionLimits::Ticket> ticket) {
  std::make_shared<HttpSession>(std::move(socket), shared, std::move(ticket))->run();
}

}  // namespace voxrt::server
