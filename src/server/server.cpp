#include "server/server.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <deque>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "audio/audio_io.h"
#include "server/compute_worker.h"
#include "server/io_context_pool.h"
#include "server/protocol.h"
#include "server/transcription_request.h"
#include "server/worker_pool.h"

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Request = http::request<http::string_body>;
using Response = http::response<http::string_body>;

// How long a drained server waits for its last WebSocket closes before it stops.
constexpr std::chrono::seconds kCloseGrace{5};
// Audio of an upload is queued in pieces of this length, so one long file shares the worker.
constexpr int kUploadPieceMs = 1000;

// What every session needs; owned by Server::Impl, which outlives every session.
struct Shared {
  ServerConfig config;
  std::shared_ptr<ServerMetrics> metrics;
  std::unique_ptr<WorkerPool> worker;
  std::mutex ip_mutex;
  std::unordered_map<std::string, int> connections_per_ip;
  std::atomic<int> websockets{0};

  bool authorized(const Request& request) const {
    if (config.auth_token.empty()) return true;
    const auto header = request[http::field::authorization];
    const std::string expected = "Bearer " + config.auth_token;
    if (header.size() != expected.size()) return false;
    unsigned char difference = 0;  // constant time: the token is a secret
    for (std::size_t i = 0; i < expected.size(); ++i)
      difference |= static_cast<unsigned char>(header[i] ^ expected[i]);
    return difference == 0;
  }
};

// Counts one TCP connection against its client address for as long as it lives.
class IpTicket {
 public:
  IpTicket(Shared& shared, std::string ip) : shared_(shared), ip_(std::move(ip)) {}
  ~IpTicket() {
    std::lock_guard lock(shared_.ip_mutex);
    auto it = shared_.connections_per_ip.find(ip_);
    if (it != shared_.connections_per_ip.end() && --it->second <= 0)
      shared_.connections_per_ip.erase(it);
  }
  IpTicket(const IpTicket&) = delete;
  IpTicket& operator=(const IpTicket&) = delete;

 private:
  Shared& shared_;
  std::string ip_;
};

Response make_response(const Request& request, http::status status, std::string body,
                       std::string content_type = "text/plain; charset=utf-8") {
  Response response{status, request.version()};
  response.set(http::field::server, "voxrt");
  response.set(http::field::content_type, content_type);
  response.keep_alive(request.keep_alive());
  response.body() = std::move(body);
  response.prepare_payload();
  return response;
}

Response error_response(const Request& request, http::status status, std::string_view kind,
                        std::string_view message) {
  auto response =
      make_response(request, status, error_json(kind, message) + "\n", "application/json");
  if (status == http::status::unauthorized) response.set(http::field::www_authenticate, "Bearer");
  return response;
}

// ---- WebSocket: one connection is one recognition stream --------------------------------------

class WebSocketSession : public StreamSink, public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(tcp::socket socket, Shared& shared, std::shared_ptr<IpTicket> ticket)
      : ws_(std::move(socket)),
        shared_(shared),
        ticket_(std::move(ticket)),
        decoder_(*audio::PcmChunkDecoder::create(audio::PcmEncoding::kS16LE, 1)) {}

  ~WebSocketSession() override {
    if (counted_) shared_.metrics->websocket_connections.Set(--shared_.websockets);
  }

  void run(Request request) {
    ws_.set_option(websocket::stream_base::timeout{
        std::chrono::seconds(30), std::chrono::seconds(shared_.config.idle_timeout_s), false});
    // The message size limit is ours, not Beast's: when Beast's read_message_max trips it tears
    // the TCP connection down with the rest of the frame unread (Boost 1.74 reads one chunk), so
    // the kernel answers with a reset and the client never sees the close reason. Reading in
    // pieces and closing with a handshake drains the frame and delivers 1009.
    ws_.read_message_max(0);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& response) { response.set(http::field::server, "voxrt"); }));
    ws_.async_accept(request,
                     beast::bind_front_handler(&WebSocketSession::on_accept, shared_from_this()));
  }

  // StreamSink (worker thread): hand everything to this connection's strand.
  void send_text(std::string message) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), m = std::move(message)]() mutable {
      self->queue_write(std::move(m));
    });
  }
  void close(int close_code, std::string reason) override {
    net::post(ws_.get_executor(), [self = shared_from_this(), close_code, r = std::move(reason)] {
      self->server_closed_ = true;
      self->begin_close(close_code, r);
    });
  }
  void resume_reading() override {
    net::post(ws_.get_executor(), [self = shared_from_this()] {
      self->paused_ = false;
      self->do_read();
    });
  }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    counted_ = true;
    shared_.metrics->websocket_connections.Set(++shared_.websockets);
    auto id = shared_.worker->admit(shared_from_this());
    if (!id) {
      const bool draining = shared_.worker->draining();
      const char* kind = draining ? "shutting_down" : "max_streams";
      shared_.metrics->count_refusal(kind);
      queue_write(error_json(kind, id.status().message()));
      begin_close(draining ? kCloseGoingAway : kCloseTryLater, kind);
      return;
    }
    id_ = *id;
    admitted_ = true;
    do_read();
  }

  void do_read() {
    if (read_pending_ || paused_ || close_requested_ || gone_) return;
    read_pending_ = true;
    // At most one byte more than the limit, so an oversized message is seen without holding it.
    const std::size_t max_bytes = shared_.config.max_message_bytes;
    const std::size_t room = max_bytes - std::min(buffer_.size(), max_bytes) + 1;
    ws_.async_read_some(buffer_, room,
                        beast::bind_front_handler(&WebSocketSession::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    read_pending_ = false;
    if (ec) {
      on_gone(ec == beast::error::timeout ? "idle_timeout" : "client_gone");
      return;
    }
    if (close_requested_) return;
    const std::size_t bytes = buffer_.size();
    if (bytes > shared_.config.max_message_bytes) {
      buffer_.consume(bytes);
      return reject("message_too_big",
                    "a message is at most " + std::to_string(shared_.config.max_message_bytes) +
                        " bytes (--max-message-bytes)",
                    kCloseTooBig);
    }
    if (!ws_.is_message_done()) return do_read();
    if (ws_.got_text()) {
      const std::string text = beast::buffers_to_string(buffer_.data());
      buffer_.consume(bytes);
      on_text(text);
    } else {
      on_binary(bytes);
    }
  }

  void on_text(const std::string& text) {
    auto message = parse_client_text(text);
    if (!message) {
      const std::string why = message.status().message();
      const char* kind = why.rfind("text frame is not valid JSON", 0) == 0 ? "invalid_json"
                         : why.rfind("config", 0) == 0 || why.rfind("\"config\"", 0) == 0
                             ? "bad_config"
                             : "bad_message";
      return reject(kind, why, kind == std::string_view("bad_config") ? kClosePolicy : 1003);
    }
    if (message->kind == ClientMessage::Kind::kConfig) {
      if (configured_) {
        return reject("bad_config", "config must come once, before any audio", kClosePolicy);
      }
      configure(message->config);
      return do_read();
    }
    if (!configured_) configure({});
    eof_ = true;
    shared_.worker->finish(id_, Clock::now());
    do_read();
  }

  void on_binary(std::size_t bytes) {
    const auto received = Clock::now();
    if (eof_) {
      buffer_.consume(bytes);
      return reject("bad_message", "audio after eof", kClosePolicy);
    }
    // Binary before any config: 16 kHz mono PCM16, as Vosk's server assumes.
    if (!configured_) configure({});
    std::vector<float> samples;
    const auto data = buffer_.data();
    decoder_.push(
        std::span<const std::uint8_t>(static_cast<const std::uint8_t*>(data.data()), data.size()),
        samples);
    buffer_.consume(bytes);
    // An empty frame (or one byte) still gets its reply, as Vosk clients wait for one.
    if (shared_.worker->push_audio(id_, std::move(samples), received)) paused_ = true;
    do_read();
  }

  void configure(const ClientConfig& config) {
    StreamSettings settings;
    settings.sample_rate_hz = config.sample_rate_hz.value_or(16000);
    settings.words = config.words;
    settings.phrase_list = config.phrase_list;
    settings.max_buffered_samples =
        static_cast<long long>(settings.sample_rate_hz) * shared_.config.max_buffered_ms / 1000;
    shared_.worker->configure(id_, std::move(settings));
    configured_ = true;
  }

  // A client error: say why, close this stream, free its slot; other streams are untouched.
  void reject(std::string_view kind, std::string_view message, int close_code) {
    shared_.metrics->count_error(kind);
    queue_write(error_json(kind, message));
    begin_close(close_code, std::string(kind));
    if (admitted_) shared_.worker->cancel(id_);
    admitted_ = false;
  }

  void on_gone(std::string_view kind) {
    if (gone_) return;
    gone_ = true;
    if (admitted_ && !server_closed_) {
      shared_.metrics->count_error(kind);
      shared_.worker->cancel(id_);
    }
    admitted_ = false;
  }

  void queue_write(std::string message) {
    if (close_requested_ || gone_) return;
    writes_.push_back(std::move(message));
    if (!writing_) write_next();
  }

  void write_next() {
    if (writes_.empty()) {
      if (close_requested_) do_close();
      return;
    }
    writing_ = true;
    ws_.text(true);
    ws_.async_write(net::buffer(writes_.front()),
                    beast::bind_front_handler(&WebSocketSession::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t) {
    writing_ = false;
    if (ec) {
      writes_.clear();
      return on_gone("client_gone");
    }
    writes_.pop_front();
    write_next();
  }

  void begin_close(int close_code, std::string reason) {
    if (close_requested_) return;
    close_requested_ = true;
    close_code_ = close_code;
    // A close reason is at most 123 bytes (RFC 6455).
    close_reason_ = reason.substr(0, 120);
    if (!writing_) write_next();
  }

  void do_close() {
    if (close_sent_ || gone_) return;
    close_sent_ = true;
    websocket::close_reason reason;
    reason.code = static_cast<std::uint16_t>(close_code_);
    reason.reason = close_reason_;
    ws_.async_close(reason, [self = shared_from_this()](beast::error_code) {});
  }

  websocket::stream<beast::tcp_stream> ws_;
  Shared& shared_;
  std::shared_ptr<IpTicket> ticket_;
  audio::PcmChunkDecoder decoder_;
  beast::flat_buffer buffer_;
  std::deque<std::string> writes_;
  StreamId id_ = 0;
  int close_code_ = kCloseNormal;
  std::string close_reason_;
  bool counted_ = false;
  bool admitted_ = false;
  bool configured_ = false;
  bool eof_ = false;
  bool paused_ = false;
  bool read_pending_ = false;
  bool writing_ = false;
  bool close_requested_ = false;
  bool close_sent_ = false;
  bool server_closed_ = false;
  bool gone_ = false;
};

// ---- HTTP: health, metrics, uploads, and the WebSocket upgrade ---------------------------------

class HttpSession;

// Collects the finals of one upload, then answers the HTTP request on the session's strand.
class UploadSink : public StreamSink {
 public:
  UploadSink(std::shared_ptr<HttpSession> session, Request request, std::string format,
             double duration_s)
      : session_(std::move(session)),
        request_(std::move(request)),
        format_(std::move(format)),
        duration_s_(duration_s) {}
  void send_text(std::string message) override;
  void close(int close_code, std::string reason) override;
  void resume_reading() override {}

 private:
  std::shared_ptr<HttpSession> session_;
  Request request_;
  std::string format_;
  double duration_s_;
  std::vector<TranscriptionSegment> segments_;
  std::string error_;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(tcp::socket socket, Shared& shared, std::shared_ptr<IpTicket> ticket,
              bool refuse_connection)
      : stream_(std::move(socket)),
        shared_(shared),
        ticket_(std::move(ticket)),
        refuse_connection_(refuse_connection) {}

  void run() {
    net::dispatch(stream_.get_executor(),
                  beast::bind_front_handler(&HttpSession::do_read, shared_from_this()));
  }

  // Any thread: answer on this session's strand.
  void respond_later(Response response) {
    net::post(stream_.get_executor(),
              [self = shared_from_this(), r = std::move(response)]() mutable {
                self->send(std::move(r));
              });
  }

 private:
  void do_read() {
    parser_.emplace();
    parser_->body_limit(shared_.config.max_upload_bytes);
    parser_->header_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds(shared_.config.idle_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&HttpSession::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream) return do_close();
    if (ec == http::error::body_limit) {
      shared_.metrics->count_refusal("upload_too_large");
      Request request;
      auto response = error_response(request, http::status::payload_too_large, "upload_too_large",
                                     "the body is larger than the server's upload limit");
      response.keep_alive(false);
      return send(std::move(response));
    }
    if (ec) return;
    Request request = parser_->release();
    if (refuse_connection_) {
      shared_.metrics->count_refusal("max_connections_per_ip");
      auto response =
          error_response(request, http::status::too_many_requests, "max_connections_per_ip",
                         "too many connections from this address");
      response.keep_alive(false);
      return send(std::move(response));
    }
    if (websocket::is_upgrade(request)) {
      if (!shared_.authorized(request)) {
        shared_.metrics->count_refusal("unauthorized");
        auto response = error_response(request, http::status::unauthorized, "unauthorized",
                                       "missing or wrong bearer token");
        response.keep_alive(false);
        return send(std::move(response));
      }
      stream_.expires_never();
      std::make_shared<WebSocketSession>(stream_.release_socket(), shared_, std::move(ticket_))
          ->run(std::move(request));
      return;
    }
    handle(std::move(request));
  }

  void handle(Request request) {
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    const bool get = request.method() == http::verb::get;
    if (target == "/healthz") {
      if (!get)
        return send(error_response(request, http::status::method_not_allowed, "method", "use GET"));
      return send(make_response(request, http::status::ok, "ok\n"));
    }
    if (target == "/readyz") {
      if (!get)
        return send(error_response(request, http::status::method_not_allowed, "method", "use GET"));
      const bool ready = !shared_.worker->draining() &&
                         shared_.worker->admitted_streams() < shared_.config.recognizer.max_streams;
      return send(make_response(request,
                                ready ? http::status::ok : http::status::service_unavailable,
                                ready ? "ready\n" : "not ready\n"));
    }
    if (target == "/metrics" || target == "/v1/audio/transcriptions") {
      if (!shared_.authorized(request)) {
        shared_.metrics->count_refusal("unauthorized");
        return send(error_response(request, http::status::unauthorized, "unauthorized",
                                   "missing or wrong bearer token"));
      }
    }
    if (target == "/metrics") {
      if (!get)
        return send(error_response(request, http::status::method_not_allowed, "method", "use GET"));
      return send(make_response(request, http::status::ok, shared_.metrics->serialize(),
                                "text/plain; version=0.0.4; charset=utf-8"));
    }
    if (target == "/v1/audio/transcriptions") {
      if (request.method() != http::verb::post)
        return send(
            error_response(request, http::status::method_not_allowed, "method", "use POST"));
      return transcribe(std::move(request));
    }
    send(error_response(request, http::status::not_found, "not_found",
                        "no such endpoint (WebSocket: any path with an Upgrade; HTTP: /healthz, "
                        "/readyz, /metrics, POST /v1/audio/transcriptions)"));
  }

  void transcribe(Request request) {
    const auto content_type = request[http::field::content_type];
    auto parsed = parse_transcription_request(
        std::string_view(content_type.data(), content_type.size()), request.body());
    if (!parsed) {
      shared_.metrics->count_error("bad_upload");
      return send(error_response(request, http::status::bad_request, "bad_upload",
                                 parsed.status().message()));
    }
    auto clip = decode_uploaded_audio(parsed->file_bytes);
    if (!clip || clip->sample_rate_hz < kMinSampleRateHz ||
        clip->sample_rate_hz > kMaxSampleRateHz) {
      shared_.metrics->count_error("bad_upload");
      return send(error_response(request, http::status::bad_request, "bad_upload",
                                 clip ? "unsupported sample rate" : clip.status().message()));
    }
    const double duration_s =
        static_cast<double>(clip->samples.size()) / static_cast<double>(clip->sample_rate_hz);
    auto sink = std::make_shared<UploadSink>(shared_from_this(), request, parsed->response_format,
                                             duration_s);
    auto id = shared_.worker->admit(sink);
    if (!id) {
      const bool draining = shared_.worker->draining();
      shared_.metrics->count_refusal(draining ? "shutting_down" : "max_streams");
      return send(error_response(request, http::status::service_unavailable,
                                 draining ? "shutting_down" : "max_streams",
                                 id.status().message()));
    }
    StreamSettings settings;
    settings.sample_rate_hz = clip->sample_rate_hz;
    settings.words = true;
    shared_.worker->configure(*id, settings);
    const std::size_t piece =
        static_cast<std::size_t>(clip->sample_rate_hz) * kUploadPieceMs / 1000;
    const auto now = Clock::now();
    for (std::size_t at = 0; at < clip->samples.size(); at += piece) {
      const std::size_t end = std::min(clip->samples.size(), at + piece);
      (void)shared_.worker->push_audio(
          *id,
          std::vector<float>(clip->samples.begin() + static_cast<std::ptrdiff_t>(at),
                             clip->samples.begin() + static_cast<std::ptrdiff_t>(end)),
          now);
    }
    shared_.worker->finish(*id, now);
    // The answer comes through UploadSink::close -> respond_later.
  }

 public:
  void send(Response response) {
    auto shared_response = std::make_shared<Response>(std::move(response));
    http::async_write(
        stream_, *shared_response,
        [self = shared_from_this(), shared_response](beast::error_code ec, std::size_t) {
          if (ec) return;
          if (shared_response->need_eof()) return self->do_close();
          self->do_read();
        });
  }

 private:
  void do_close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  Shared& shared_;
  std::shared_ptr<IpTicket> ticket_;
  bool refuse_connection_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
};

void UploadSink::send_text(std::string message) {
  auto reply = nlohmann::json::parse(message, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) return;
  if (reply.contains("error")) {
    error_ = reply.value("error", std::string("error"));
    return;
  }
  if (!reply.contains("text")) return;  // partials do not matter for an upload
  TranscriptionSegment segment;
  segment.text = reply.value("text", std::string());
  if (reply.contains("result") && reply["result"].is_array()) {
    for (const auto& w : reply["result"]) {
      decode::WordResult word;
      word.word = w.value("word", std::string());
      word.start_s = w.value("start", 0.0);
      word.end_s = w.value("end", 0.0);
      word.confidence = w.value("conf", 0.0f);
      segment.words.push_back(std::move(word));
    }
  }
  segments_.push_back(std::move(segment));
}

void UploadSink::close(int close_code, std::string reason) {
  if (!error_.empty() || (close_code != kCloseNormal && close_code != kCloseGoingAway)) {
    session_->respond_later(error_response(request_, http::status::bad_request, reason,
                                           error_.empty() ? reason : error_));
  } else {
    auto formatted = format_transcription(segments_, format_, duration_s_);
    session_->respond_later(make_response(request_, http::status::ok, std::move(formatted.body),
                                          std::move(formatted.content_type)));
  }
  session_.reset();
}

// ---- Listener
// ------------------------------------------------------------------------------------

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(IoContextPool& pool, Shared& shared)
      : pool_(pool), acceptor_(pool.first()), shared_(shared) {}

  Status open(const std::string& host, int port) {
    beast::error_code ec;
    const auto address = net::ip::make_address(host, ec);
    if (ec) return invalid_argument("serve: --host '", host, "' is not an IP address");
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) return io_error("serve: cannot listen on ", host, ":", port, ": ", ec.message());
    return Status::ok();
  }
  int port() const { return acceptor_.local_endpoint().port(); }
  void start() { do_accept(); }
  void stop() {
    beast::error_code ec;
    acceptor_.close(ec);
  }

 private:
  void do_accept() {
    // Each connection lives on one of the pool's contexts (and its thread) from here on.
    acceptor_.async_accept(net::make_strand(pool_.next()),
                           beast::bind_front_handler(&Listener::on_accept, shared_from_this()));
  }

  void on_accept(beast::error_code ec, tcp::socket socket) {
    if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      beast::error_code ip_ec;
      // Replies are small and latency-bound: Nagle + the client's delayed ACK would hold each
      // one until the next frame arrives (~20 ms).
      socket.set_option(tcp::no_delay(true), ip_ec);
      const std::string ip = socket.remote_endpoint(ip_ec).address().to_string();
      bool refuse = false;
      {
        std::lock_guard lock(shared_.ip_mutex);
        int& count = shared_.connections_per_ip[ip];
        if (count >= shared_.config.max_connections_per_ip) {
          refuse = true;
        } else {
          ++count;
        }
      }
      auto ticket = refuse ? nullptr : std::make_shared<IpTicket>(shared_, ip);
      std::make_shared<HttpSession>(std::move(socket), shared_, std::move(ticket), refuse)->run();
    }
    do_accept();
  }

  IoContextPool& pool_;
  tcp::acceptor acceptor_;
  Shared& shared_;
};

}  // namespace

// Declared after Shared: the io_context (and every session it holds) goes first.
struct Server::Impl {
  Shared shared;
  IoContextPool io;
  std::shared_ptr<Listener> listener;
  std::optional<net::signal_set> signals;
  std::atomic<bool> stopping{false};
  std::mutex drain_mutex;
  std::thread drain_thread;

  explicit Impl(int io_threads) : io(io_threads) {}
  ~Impl() {
    if (drain_thread.joinable()) drain_thread.join();
    // Streams still open hold sinks that post to `io`: finish them while it exists.
    if (shared.worker) shared.worker->drain_and_stop();
  }

  void shutdown() {
    if (stopping.exchange(true)) return;
    net::post(io.first(), [this] {
      listener->stop();
      if (signals) signals->cancel();
    });
    std::lock_guard lock(drain_mutex);
    drain_thread = std::thread([this] {
      shared.worker->drain_and_stop();
      const auto deadline = Clock::now() + kCloseGrace;
      while (shared.websockets.load() > 0 && Clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      io.stop();
    });
  }
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() = default;

Expected<std::unique_ptr<Server>> Server::create(const ServerConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto impl = std::make_unique<Impl>(config.io_threads);
  impl->shared.config = config;
  impl->shared.metrics = std::make_shared<ServerMetrics>();
  VOXRT_ASSIGN_OR_RETURN(impl->shared.worker, WorkerPool::create(config, impl->shared.metrics));
  impl->listener = std::make_shared<Listener>(impl->io, impl->shared);
  VOXRT_RETURN_IF_ERROR(impl->listener->open(config.host, config.port));
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::run() {
  Impl& impl = *impl_;
  if (impl.shared.config.handle_signals) {
    impl.signals.emplace(impl.io.first(), SIGINT, SIGTERM);
    impl.signals->async_wait([this](beast::error_code ec, int) {
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
  return impl_->shared.worker->admitted_streams();
}
int Server::slots_in_use() const {
  return impl_->shared.worker->slots_in_use();
}

}  // namespace voxrt::server
