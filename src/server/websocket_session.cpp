#include "server/websocket_session.h"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <deque>
#include <string>

#include "audio/audio_io.h"
#include "server/compute_worker.h"
#include "server/protocol.h"

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

class WebSocketSession : public StreamSink, public std::enable_shared_from_this<WebSocketSession> {
 public:
  WebSocketSession(tcp::socket socket, ServerShared& shared,
                   std::shared_ptr<ConnectionLimits::Ticket> ticket)
      : ws_(std::move(socket)),
        shared_(shared),
        ticket_(std::move(ticket)),
        decoder_(*audio::PcmChunkDecoder::create(audio::PcmEncoding::kS16LE, 1)),
        idle_timer_(ws_.get_executor()) {}

  ~WebSocketSession() override {
    if (counted_) shared_.metrics->websocket_connections.Set(--shared_.websockets);
  }

  void run(HttpRequest request) {
    // ws://host/models/NAME chooses a model of a repository; any other path the default one.
    std::string_view target(request.target().data(), request.target().size());
    target = target.substr(0, target.find('?'));
    constexpr std::string_view kModels = "/models/";
    if (target.rfind(kModels, 0) == 0)
      requested_model_ = std::string(target.substr(kModels.size()));
    // Beast's own idle timeout is off: it does not count client pings as activity and ends the
    // connection without a close frame. The session's idle timer below does both right. The
    // handshake timeout also bounds a close handshake the client never answers.
    websocket::stream_base::timeout timeouts{};
    timeouts.handshake_timeout = std::chrono::seconds(30);
    timeouts.idle_timeout = websocket::stream_base::none();
    timeouts.keep_alive_pings = false;
    ws_.set_option(timeouts);
    // The message size limit is ours, not Beast's: when Beast's read_message_max trips it tears
    // the TCP connection down with the rest of the frame unread (Boost 1.74 reads one chunk), so
    // the kernel answers with a reset and the client never sees the close reason. Reading in
    // pieces and closing with a handshake drains the frame and delivers 1009.
    ws_.read_message_max(0);
    ws_.set_option(websocket::stream_base::decorator(
        [](websocket::response_type& response) { response.set(http::field::server, "voxrt"); }));
    // Pings and pongs are activity: a client that keeps its connection alive with pings while it
    // listens is not idle.
    ws_.control_callback(
        [this](websocket::frame_type, beast::string_view) { last_activity_ = Clock::now(); });
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
      // Time spent paused by the server is not the client's silence.
      self->last_activity_ = Clock::now();
      self->do_read();
    });
  }

 private:
  void on_accept(beast::error_code ec) {
    if (ec) return;
    counted_ = true;
    shared_.metrics->websocket_connections.Set(++shared_.websockets);
    last_activity_ = Clock::now();
    arm_idle_timer();
    auto admission = shared_.models->admit(requested_model_, shared_from_this());
    if (!admission) {
      const bool draining = shared_.models->draining();
      const bool unknown = admission.status().code() == StatusCode::kNotFound;
      const char* kind = draining ? "shutting_down" : unknown ? "model_not_found" : "max_streams";
      shared_.metrics->count_refusal(kind);
      queue_write(error_json(kind, admission.status().message()));
      begin_close(draining ? kCloseGoingAway : unknown ? kClosePolicy : kCloseTryLater, kind);
      return;
    }
    pool_ = std::move(admission->pool);
    id_ = admission->id;
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
      if (ec == websocket::error::bad_frame_payload) {
        on_gone("invalid_utf8");  // Beast has failed the connection with 1007
      } else if (ec == websocket::condition::protocol_violation) {
        on_gone("protocol_error");  // Beast has failed the connection with 1002
      } else {
        on_gone("client_gone");
      }
      return;
    }
    last_activity_ = Clock::now();
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
    if (ended_by_server_) {  // after an idle timeout the stream's final is on its way
      buffer_.consume(bytes);
      return do_read();
    }
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
    pool_->finish(id_, Clock::now());
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
    // An empty frame (or one byte) still gets its reply, as Vosk clients wait for one; it
    // counts as 10 ms of audio against the stream's bound (ComputeWorker::push_audio).
    if (pool_->push_audio(id_, std::move(samples), received)) paused_ = true;
    do_read();
  }

  void configure(const ClientConfig& config) {
    StreamSettings settings;
    settings.sample_rate_hz = config.sample_rate_hz.value_or(16000);
    settings.words = config.words;
    settings.phrase_list = config.phrase_list;
    settings.decoder = config.decoder;
    settings.use_lm = config.use_lm;
    settings.decoding = config.decoding;
    settings.whisper = config.whisper;
    settings.max_buffered_samples =
        static_cast<long long>(settings.sample_rate_hz) * shared_.config.max_buffered_ms / 1000;
    pool_->configure(id_, std::move(settings));
    configured_ = true;
  }

  // The idle timer wakes at the last activity + --idle-timeout-s; activity in between only moves
  // the timestamp (no timer operation per frame).
  void arm_idle_timer() {
    idle_timer_.expires_at(last_activity_ + std::chrono::seconds(shared_.config.idle_timeout_s));
    idle_timer_.async_wait(
        beast::bind_front_handler(&WebSocketSession::on_idle_timer, shared_from_this()));
  }

  void on_idle_timer(beast::error_code ec) {
    if (ec || gone_ || close_requested_ || ended_by_server_) return;
    const auto deadline = last_activity_ + std::chrono::seconds(shared_.config.idle_timeout_s);
    // Not idle: there was activity since the timer was set, the server paused reading, or the
    // client has sent eof and waits for the final.
    if (Clock::now() < deadline || paused_ || eof_) return arm_idle_timer();
    shared_.metrics->count_error("idle_timeout");
    if (!admitted_) return begin_close(kCloseNormal, "idle_timeout");
    // End the stream as if the client had sent eof: the unfinished utterance's final is sent,
    // then the worker closes with 1000 "idle_timeout".
    if (!configured_) configure({});
    eof_ = true;
    ended_by_server_ = true;
    pool_->finish(id_, Clock::now(), "idle_timeout");
  }

  // A client error: say why, close this stream, free its slot; other streams are untouched.
  void reject(std::string_view kind, std::string_view message, int close_code) {
    shared_.metrics->count_error(kind);
    queue_write(error_json(kind, message));
    begin_close(close_code, std::string(kind));
    if (admitted_) pool_->cancel(id_);
    admitted_ = false;
  }

  void on_gone(std::string_view kind) {
    if (gone_) return;
    gone_ = true;
    idle_timer_.cancel();
    if (admitted_ && !server_closed_) {
      shared_.metrics->count_error(kind);
      pool_->cancel(id_);
    } else if (!admitted_ && kind != "client_gone") {
      shared_.metrics->count_error(kind);
    }
    admitted_ = false;
  }

  void queue_write(std::string message) {
    if (close_requested_ || gone_) return;
    // A client that does not read its replies would otherwise grow this queue without bound
    // (one connection once added 826 MB in 107 s). It cannot read a close frame either, so the
    // connection is dropped.
    if (queued_bytes_ + message.size() > shared_.config.max_reply_queue_bytes) {
      return drop_slow_reader();
    }
    queued_bytes_ += message.size();
    writes_.push_back(std::move(message));
    if (!writing_) write_next();
  }

  void drop_slow_reader() {
    shared_.metrics->count_error("slow_reader");
    if (admitted_) pool_->cancel(id_);
    admitted_ = false;
    // A write in flight still refers to the front message until it completes (aborted below).
    writes_.erase(writes_.begin() + (writing_ ? 1 : 0), writes_.end());
    queued_bytes_ = 0;
    gone_ = true;
    idle_timer_.cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
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
    if (ec || gone_) {
      writes_.clear();
      queued_bytes_ = 0;
      return on_gone("client_gone");
    }
    queued_bytes_ -= writes_.front().size();
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
    idle_timer_.cancel();
    websocket::close_reason reason;
    reason.code = static_cast<std::uint16_t>(close_code_);
    reason.reason = close_reason_;
    ws_.async_close(reason, [self = shared_from_this()](beast::error_code) {});
  }

  websocket::stream<beast::tcp_stream> ws_;
  ServerShared& shared_;
  std::shared_ptr<ConnectionLimits::Ticket> ticket_;
  std::string requested_model_;
  // The compute workers of the model version the stream was admitted to: every later command
  // of the stream goes there, even after a newer version has been published.
  std::shared_ptr<WorkerPool> pool_;
  audio::PcmChunkDecoder decoder_;
  net::steady_timer idle_timer_;
  Clock::time_point last_activity_ = Clock::now();
  beast::flat_buffer buffer_;
  std::deque<std::string> writes_;
  std::size_t queued_bytes_ = 0;
  StreamId id_ = 0;
  int close_code_ = kCloseNormal;
  std::string close_reason_;
  bool counted_ = false;
  bool admitted_ = false;
  bool configured_ = false;
  bool eof_ = false;
  bool ended_by_server_ = false;
  bool paused_ = false;
  bool read_pending_ = false;
  bool writing_ = false;
  bool close_requested_ = false;
  bool close_sent_ = false;
  bool server_closed_ = false;
  bool gone_ = false;
};

}  // namespace

void start_websocket_session(tcp::socket socket, ServerShared& shared,
                             std::shared_ptr<ConnectionLimits::Ticket> ticket,
                             HttpRequest upgrade_request) {
  std::make_shared<WebSocketSession>(std::move(socket), shared, std::move(ticket))
      ->run(std::move(upgrade_request));
}

}  // namespace voxrt::server
