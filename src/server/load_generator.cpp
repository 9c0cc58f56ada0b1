#include "server/load_generator.h"

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <cctype>
#include <chrono>
#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "audio/audio_io.h"
#include "server/io_context_pool.h"

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

LatencySummary summarize(std::vector<double> values) {
  LatencySummary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  auto at = [&](double p) {
    const auto rank = static_cast<std::size_t>(std::ceil(p / 100.0 * values.size()));
    return values[std::min(values.size() - 1, rank == 0 ? 0 : rank - 1)];
  };
  s.p50_ms = at(50);
  s.p95_ms = at(95);
  s.p99_ms = at(99);
  s.max_ms = values.back();
  return s;
}

struct Clip {
  std::string path;
  std::vector<std::uint8_t> pcm16;  // little-endian mono
  int sample_rate_hz = 16000;
  double seconds = 0;
  std::vector<std::string> reference;  // empty: no FILE.txt
  bool has_reference = false;
};

// Everything the clients record, under one mutex (recording is rare next to waiting).
struct Tally {
  std::mutex mutex;
  std::vector<double> chunk_ms, first_partial_ms, final_ms;
  LoadGenReport report;
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(net::io_context& io, const LoadGenConfig& config, const WsTarget& target,
          const Clip& clip, Tally& tally, Clock::time_point stop_at, std::function<void()> on_done)
      : config_(config),
        target_(target),
        clip_(clip),
        tally_(tally),
        stop_at_(stop_at),
        on_done_(std::move(on_done)),
        ws_(net::make_strand(io)),
        timer_(ws_.get_executor()) {
    frame_bytes_ = static_cast<std::size_t>(clip.sample_rate_hz) * config.chunk_ms / 1000 * 2;
  }

  void start(Clock::time_point at) {
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (!ec) self->connect();
    });
  }

 private:
  void connect() {
    beast::error_code ec;
    const tcp::endpoint endpoint(net::ip::make_address(target_.host, ec),
                                 static_cast<unsigned short>(target_.port));
    beast::get_lowest_layer(ws_).expires_after(std::chrono::seconds(10));
    beast::get_lowest_layer(ws_).async_connect(
        endpoint, [self = shared_from_this()](beast::error_code e) { self->on_connect(e); });
  }

  void on_connect(beast::error_code ec) {
    if (ec) return finish("connect: " + ec.message(), false);
    beast::get_lowest_layer(ws_).expires_never();
    beast::error_code nodelay_ec;  // small frames must leave at once (no Nagle)
    beast::get_lowest_layer(ws_).socket().set_option(tcp::no_delay(true), nodelay_ec);
    ws_.set_option(websocket::stream_base::timeout::suggested(beast::role_type::client));
    const std::string token = config_.auth_token;
    ws_.set_option(websocket::stream_base::decorator([token](websocket::request_type& request) {
      if (!token.empty()) request.set(beast::http::field::authorization, "Bearer " + token);
    }));
    ws_.async_handshake(
        response_, target_.host + ":" + std::to_string(target_.port), target_.path,
        [self = shared_from_this()](beast::error_code e) { self->on_handshake(e); });
  }

  void on_handshake(beast::error_code ec) {
    if (ec) {
      const bool refused = response_.result_int() == 429 || response_.result_int() == 503 ||
                           response_.result_int() == 401;
      return finish(
          "handshake: " + ec.message() + " (HTTP " + std::to_string(response_.result_int()) + ")",
          refused);
    }
    do_read();
    nlohmann::json config = {{"config", {{"sample_rate", clip_.sample_rate_hz}, {"words", false}}}};
    queue(config.dump(), true);
    started_ = Clock::now();
    if (config_.realtime) {
      schedule_next(started_);
    } else {
      send_frame();
    }
  }

  // Real-time pace: frame k leaves at started_ + k * chunk_ms, whatever the replies do.
  void schedule_next(Clock::time_point at) {
    timer_.expires_at(at);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec || self->done_) return;
      self->send_frame();
      if (!self->eof_sent_)
        self->schedule_next(self->started_ +
                            std::chrono::milliseconds(self->config_.chunk_ms * self->frames_sent_));
    });
  }

  void send_frame() {
    if (eof_sent_ || done_) return;
    const bool out_of_time = config_.duration_s > 0 && Clock::now() >= stop_at_;
    if (next_byte_ >= clip_.pcm16.size() || out_of_time) {
      eof_sent_ = true;
      eof_at_ = Clock::now();
      queue(R"({"eof": 1})", true);
      // A server that never answers the eof must not hang the run.
      timer_.expires_after(
          std::chrono::milliseconds(static_cast<long long>(config_.final_timeout_s * 1000)));
      timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec && !self->done_) self->finish("no final within the timeout", false);
      });
      return;
    }
    const std::size_t end = std::min(clip_.pcm16.size(), next_byte_ + frame_bytes_);
    std::string frame(reinterpret_cast<const char*>(clip_.pcm16.data() + next_byte_),
                      end - next_byte_);
    next_byte_ = end;
    ++frames_sent_;
    audio_sent_s_ += static_cast<double>(frame.size()) / 2.0 / clip_.sample_rate_hz;
    queue(std::move(frame), false);
  }

  // A frame's reply clock starts when it is due to leave (any client-side backlog counts).
  void queue(std::string payload, bool text) {
    if (!text) sent_.push_back(Clock::now());
    writes_.push_back({std::move(payload), text});
    if (!writing_) write_next();
  }

  void write_next() {
    if (writes_.empty() || done_) return;
    writing_ = true;
    ws_.text(writes_.front().second);
    ws_.async_write(net::buffer(writes_.front().first),
                    [self = shared_from_this()](beast::error_code ec, std::size_t) {
                      self->writing_ = false;
                      if (ec) return self->finish("write: " + ec.message(), false);
                      self->writes_.pop_front();
                      self->write_next();
                    });
  }

  void do_read() {
    ws_.async_read(buffer_, [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->on_read(ec);
    });
  }

  void on_read(beast::error_code ec) {
    if (done_) return;
    if (ec) {
      if (ec == websocket::error::closed && eof_sent_ && got_final_after_eof_)
        return finish("", false);
      const auto reason = ws_.reason();
      std::string why = "read: " + ec.message();
      if (reason.code != 0)
        why += " (close " + std::to_string(reason.code) + " " +
               std::string(reason.reason.data(), reason.reason.size()) + ")";
      return finish(error_.empty() ? why : error_, refused_);
    }
    const auto now = Clock::now();
    auto reply = nlohmann::json::parse(beast::buffers_to_string(buffer_.data()), nullptr, false);
    buffer_.consume(buffer_.size());
    if (reply.is_discarded() || !reply.is_object()) {
      error_ = "reply is not a JSON object";
    } else if (reply.contains("error")) {
      const std::string kind = reply.value("kind", std::string());
      refused_ = kind == "max_streams" || kind == "shutting_down";
      error_ = kind + ": " + reply.value("error", std::string());
    } else {
      if (!sent_.empty()) {
        chunk_ms_.push_back(ms_between(sent_.front(), now));
        sent_.pop_front();
      }
      if (reply.contains("partial")) {
        if (!first_partial_recorded_ && !reply["partial"].get<std::string>().empty()) {
          first_partial_recorded_ = true;
          first_partial_ms_ = ms_between(started_, now);
        }
      } else if (reply.contains("text")) {
        const std::string text = reply.value("text", std::string());
        if (!text.empty()) text_ += (text_.empty() ? "" : " ") + text;
        if (eof_sent_) {
          got_final_after_eof_ = true;
          final_ms_ = ms_between(eof_at_, now);
        }
      }
      if (!config_.realtime && !eof_sent_ && sent_.empty() && writes_.empty()) send_frame();
    }
    do_read();
  }

  void finish(const std::string& error, bool refused) {
    if (done_) return;
    done_ = true;
    timer_.cancel();
    beast::error_code ignored;
    beast::get_lowest_layer(ws_).socket().close(ignored);
    {
      std::lock_guard lock(tally_.mutex);
      auto& r = tally_.report;
      ++r.sessions;
      StreamOutcome outcome;
      outcome.file = clip_.path;
      outcome.text = text_;
      outcome.error = error;
      outcome.refused = refused;
      outcome.whole = next_byte_ >= clip_.pcm16.size();
      if (refused) {
        ++r.refused;
      } else if (!error.empty()) {
        ++r.errors;
      } else {
        ++r.completed;
        tally_.chunk_ms.insert(tally_.chunk_ms.end(), chunk_ms_.begin(), chunk_ms_.end());
        if (first_partial_recorded_) tally_.first_partial_ms.push_back(first_partial_ms_);
        tally_.final_ms.push_back(final_ms_);
        r.audio_s += audio_sent_s_;
        // WER only for files sent whole (a --duration cut would count missing words).
        if (clip_.has_reference && next_byte_ >= clip_.pcm16.size()) {
          r.reference_words += static_cast<long long>(clip_.reference.size());
          r.word_errors += word_edit_distance(clip_.reference, normalize_words(text_));
        }
      }
      r.outcomes.push_back(std::move(outcome));
    }
    on_done_();
  }

  const LoadGenConfig& config_;
  const WsTarget& target_;
  const Clip& clip_;
  Tally& tally_;
  Clock::time_point stop_at_;
  std::function<void()> on_done_;
  websocket::stream<beast::tcp_stream> ws_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  websocket::response_type response_;
  std::deque<std::pair<std::string, bool>> writes_;
  std::deque<Clock::time_point> sent_;
  std::vector<double> chunk_ms_;
  std::size_t frame_bytes_ = 640;
  std::size_t next_byte_ = 0;
  long long frames_sent_ = 0;
  double audio_sent_s_ = 0;
  Clock::time_point started_, eof_at_;
  double first_partial_ms_ = 0, final_ms_ = 0;
  std::string text_, error_;
  bool writing_ = false, eof_sent_ = false, done_ = false, refused_ = false;
  bool first_partial_recorded_ = false, got_final_after_eof_ = false;
};

Expected<Clip> load_clip(const std::string& path) {
  auto audio = audio::read_audio_file(path);
  if (!audio) return audio.status();
  Clip clip;
  clip.path = path;
  clip.sample_rate_hz = audio->sample_rate_hz;
  clip.seconds = static_cast<double>(audio->samples.size()) / audio->sample_rate_hz;
  clip.pcm16.reserve(audio->samples.size() * 2);
  for (float s : audio->samples) {
    const auto v = static_cast<std::int16_t>(
        std::lround(std::clamp(s, -1.0f, 32767.0f / 32768.0f) * 32768.0f));
    clip.pcm16.push_back(static_cast<std::uint8_t>(v & 0xff));
    clip.pcm16.push_back(static_cast<std::uint8_t>((v >> 8) & 0xff));
  }
  std::filesystem::path reference = path;
  reference.replace_extension(".txt");
  if (std::ifstream in(reference); in) {
    std::stringstream text;
    text << in.rdbuf();
    clip.reference = normalize_words(text.str());
    clip.has_reference = true;
  }
  return clip;
}

void write_summary(nlohmann::json& out, const char* name, const LatencySummary& s) {
  out[name] = {{"count", s.count},
               {"p50_ms", s.p50_ms},
               {"p95_ms", s.p95_ms},
               {"p99_ms", s.p99_ms},
               {"max_ms", s.max_ms}};
}

}  // namespace

Status LoadGenConfig::validate() const {
  VOXRT_RETURN_IF_ERROR(parse_loopback_url(url).status());
  if (streams < 1 || streams > 100000)
    return invalid_argument("loadgen: --streams must be 1..100000, got ", streams);
  if (files.empty() && wav_dir.empty()) return invalid_argument("loadgen: --wav-dir is required");
  if (chunk_ms < 1 || chunk_ms > 10000)
    return invalid_argument("loadgen: chunk_ms must be 1..10000, got ", chunk_ms);
  if (duration_s < 0 || duration_s > 86400)
    return invalid_argument("loadgen: --duration must be 0..86400 s, got ", duration_s);
  if (threads < 1 || threads > 256)
    return invalid_argument("loadgen: --threads must be 1..256, got ", threads);
  return Status::ok();
}

Expected<WsTarget> parse_loopback_url(const std::string& url) {
  const std::string scheme = "ws://";
  if (url.rfind(scheme, 0) != 0)
    return invalid_argument("loadgen: --url must start with ws:// (found '", url, "')");
  std::string rest = url.substr(scheme.size());
  WsTarget target;
  const std::size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    target.path = rest.substr(slash);
    rest = rest.substr(0, slash);
  }
  std::string host, port;
  if (!rest.empty() && rest.front() == '[') {
    const std::size_t close = rest.find(']');
    if (close == std::string::npos)
      return invalid_argument("loadgen: bad IPv6 host in '", url, "'");
    host = rest.substr(1, close - 1);
    if (rest.size() > close + 1 && rest[close + 1] == ':') port = rest.substr(close + 2);
  } else {
    const std::size_t colon = rest.rfind(':');
    host = rest.substr(0, colon);
    if (colon != std::string::npos) port = rest.substr(colon + 1);
  }
  if (host == "localhost") host = "127.0.0.1";
  beast::error_code ec;
  const auto address = net::ip::make_address(host, ec);
  if (ec || !address.is_loopback()) {
    return invalid_argument(
        "loadgen: only loopback targets are allowed (127.0.0.0/8, ::1, "
        "localhost); found host '",
        host, "'");
  }
  target.host = host;
  target.port = 80;
  if (!port.empty()) {
    try {
      std::size_t used = 0;
      target.port = std::stoi(port, &used);
      if (used != port.size() || target.port < 1 || target.port > 65535)
        throw std::out_of_range("");
    } catch (...) {
      return invalid_argument("loadgen: bad port '", port, "' in '", url, "'");
    }
  }
  return target;
}

Expected<LoadGenReport> run_load_generator(LoadGenConfig config) {
  if (config.files.empty() && !config.wav_dir.empty()) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(config.wav_dir, ec)) {
      if (entry.path().extension() == ".wav") config.files.push_back(entry.path().string());
    }
    if (ec) return io_error("loadgen: cannot list --wav-dir ", config.wav_dir, ": ", ec.message());
    std::sort(config.files.begin(), config.files.end());
    if (config.files.empty()) return invalid_argument("loadgen: no .wav files in ", config.wav_dir);
  }
  VOXRT_RETURN_IF_ERROR(config.validate());
  VOXRT_ASSIGN_OR_RETURN(const WsTarget target, parse_loopback_url(config.url));
  std::vector<Clip> clips;
  for (const auto& file : config.files) {
    VOXRT_ASSIGN_OR_RETURN(Clip clip, load_clip(file));
    clips.push_back(std::move(clip));
  }

  // One context per thread, sessions round-robin (io_context_pool.h: the same reason as the
  // server's), so the load generator's own threads do not limit what it measures.
  IoContextPool io(config.threads);
  Tally tally;
  tally.report.streams = config.streams;
  const auto start = Clock::now();
  const auto stop_at =
      start + std::chrono::milliseconds(static_cast<long long>(config.duration_s * 1000));
  std::atomic<int> running{0};
  // One "stream" is a client slot that runs sessions back to back until the duration ends.
  std::function<void(int, int, Clock::time_point)> launch = [&](int stream, int round,
                                                                Clock::time_point at) {
    const Clip& clip = clips[static_cast<std::size_t>(stream + round) % clips.size()];
    running.fetch_add(1);
    auto session = std::make_shared<Session>(io.next(), config, target, clip, tally, stop_at,
                                             [&, stream, round] {
                                               if (config.duration_s > 0 && Clock::now() < stop_at)
                                                 launch(stream, round + 1, Clock::now());
                                               // The last session out stops the contexts (kept
                                               // alive so an idle one is still there for a later
                                               // session).
                                               if (running.fetch_sub(1) == 1) io.stop();
                                             });
    session->start(at);
  };
  // Real microphones are not in phase: spread the starts over one 320 ms model chunk.
  for (int s = 0; s < config.streams; ++s)
    launch(s, 0, start + std::chrono::microseconds(320000LL * s / config.streams));
  io.run("voxrt-loadgen", /*keep_alive=*/true);
  tally.report.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  tally.report.chunk_latency = summarize(tally.chunk_ms);
  tally.report.first_partial_latency = summarize(tally.first_partial_ms);
  tally.report.final_latency = summarize(tally.final_ms);
  return tally.report;
}

std::string LoadGenReport::to_json() const {
  nlohmann::json out = {{"streams", streams},    {"sessions", sessions}, {"completed", completed},
                        {"refused", refused},    {"errors", errors},     {"audio_seconds", audio_s},
                        {"wall_seconds", wall_s}};
  write_summary(out, "chunk_latency", chunk_latency);
  write_summary(out, "first_partial_latency", first_partial_latency);
  write_summary(out, "final_latency", final_latency);
  out["reference_words"] = reference_words;
  out["word_errors"] = word_errors;
  out["wer"] =
      reference_words > 0
          ? nlohmann::json(static_cast<double>(word_errors) / static_cast<double>(reference_words))
          : nlohmann::json(nullptr);
  nlohmann::json results = nlohmann::json::array();
  for (const auto& o : outcomes) {
    results.push_back({{"file", o.file},
                       {"text", o.text},
                       {"error", o.error},
                       {"refused", o.refused},
                       {"whole", o.whole}});
  }
  out["results"] = std::move(results);
  return out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string LoadGenReport::to_text() const {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  auto line = [&](const char* name, const LatencySummary& s) {
    out << "  " << name << ": n=" << s.count << " p50 " << s.p50_ms << " p95 " << s.p95_ms
        << " p99 " << s.p99_ms << " max " << s.max_ms << " ms\n";
  };
  out << "streams " << streams << ", sessions " << sessions << ": completed " << completed
      << ", refused " << refused << ", errors " << errors << "; " << audio_s << " s of audio in "
      << wall_s << " s\n";
  line("per-frame reply latency", chunk_latency);
  line("first partial (from stream start)", first_partial_latency);
  line("final (from eof)", final_latency);
  if (reference_words > 0) {
    out.precision(2);
    out << "  WER "
        << 100.0 * static_cast<double>(word_errors) / static_cast<double>(reference_words) << "% ("
        << word_errors << " errors / " << reference_words << " reference words)\n";
  }
  for (const auto& o : outcomes) {
    if (!o.error.empty()) out << "  " << o.file << ": " << o.error << "\n";
  }
  return out.str();
}

}  // namespace voxrt::server
