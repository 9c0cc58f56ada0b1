// Shared by the server's end-to-end and hostile-client tests: the engine and speech assets (the
// default model compiled with `voxrt build`, sentences spoken by espeak-ng), the Recognizer's text
// for a clip on its own, a synchronous Beast WebSocket client, an in-process server on a free
// loopback port, HTTP requests, and a child process for the voxrt binary.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "audio/audio_io.h"
#include "server/io_context_pool.h"
#include "server/load_generator.h"
#include "server/server.h"
#include "stream/recognizer.h"

extern char** environ;

// Each test binary builds its engine and speech in its own folder (they run in parallel).
#ifndef VOXRT_SERVER_TEST_WORK
#define VOXRT_SERVER_TEST_WORK "server_work"
#endif

namespace voxrt::server::server_test {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
namespace fs = std::filesystem;

inline std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}
inline fs::path source_dir() {
  return env_or("VOXRT_SOURCE_DIR", ".");
}
inline fs::path binary_dir() {
  return env_or("VOXRT_BINARY_DIR", ".");
}
inline fs::path work_dir() {
  return binary_dir() / "tests" / VOXRT_SERVER_TEST_WORK;
}
inline fs::path voxrt_binary() {
  // The TSan stage runs the release build's binary (it does not build the CLI itself).
  if (const char* path = std::getenv("VOXRT_TEST_VOXRT")) return path;
  return binary_dir() / "bin" / "voxrt";
}

// The Python with onnx and numpy that makes the test models (bench/server/make_null_model.py,
// tests/server/make_faulty_model.py): Debian's here; VOXRT_PYTHON where that one lacks them (the
// GPU machine's /usr/bin/python3).
inline std::string python() {
  return env_or("VOXRT_PYTHON", "/usr/bin/python3");
}

inline int run_shell(const std::string& command) {
  return std::system(command.c_str());
}

// ---- fixtures: engine and speech -------------------------------------------------------------

struct Speech {
  std::string path;
  std::vector<std::uint8_t> pcm16;
  int sample_rate_hz = 16000;
};

inline const std::vector<std::string> kSentences = {
    "the quick brown fox jumps over the lazy dog",
    "please call stella and ask her to bring these things with her from the store",
    "she sells sea shells by the sea shore",
    "turn on the lights in the kitchen",
};

inline Speech load_speech(const std::string& path) {
  auto clip = audio::read_audio_file(path);
  EXPECT_TRUE(clip.has_value()) << clip.status().message();
  Speech s;
  s.path = path;
  s.sample_rate_hz = clip->sample_rate_hz;
  for (float x : clip->samples) {
    const auto v = static_cast<std::int16_t>(
        std::lround(std::clamp(x, -1.0f, 32767.0f / 32768.0f) * 32768.0f));
    s.pcm16.push_back(static_cast<std::uint8_t>(v & 0xff));
    s.pcm16.push_back(static_cast<std::uint8_t>((v >> 8) & 0xff));
  }
  return s;
}

class Assets {
 public:
  static Assets& get() {
    static Assets assets;
    return assets;
  }
  std::string engine;
  std::vector<Speech> speech;  // 16 kHz espeak-ng sentences, one 8 kHz, and the bundled sample
  std::string setup_error;

 private:
  Assets() {
    fs::create_directories(work_dir());
    engine = (work_dir() / "default.engine").string();
    if (const char* prebuilt = std::getenv("VOXRT_TEST_ENGINE")) engine = prebuilt;
    if (!fs::exists(engine)) {
      const std::string command = voxrt_binary().string() + " build --onnx " +
                                  (source_dir() / "models/default/model.onnx").string() +
                                  " --engine " + engine +
                                  " --profile features:1x4x80/8x32x80/64x32x80 > " +
                                  (work_dir() / "build.log").string() + " 2>&1";
      if (run_shell(command) != 0) setup_error = "voxrt build failed: " + command;
    }
    for (std::size_t i = 0; i < kSentences.size(); ++i) {
      const int rate = i == 3 ? 8000 : 16000;
      const fs::path wav = work_dir() / ("speech" + std::to_string(i) + ".wav");
      if (!fs::exists(wav)) {
        const fs::path raw = work_dir() / ("speech" + std::to_string(i) + ".raw.wav");
        const std::string command = "espeak-ng -s 150 -w " + raw.string() + " '" + kSentences[i] +
                                    "' && sox " + raw.string() + " -r " + std::to_string(rate) +
                                    " -c 1 -b 16 " + wav.string() + " pad 0.3 0.8";
        if (run_shell(command) != 0) setup_error = "speech synthesis failed: " + command;
      }
      speech.push_back(load_speech(wav.string()));
    }
    speech.push_back(load_speech((source_dir() / "samples/play_music.wav").string()));
    // The four sentences one after the other at 16 kHz (17 s): uploads are fed in 1 s pieces,
    // the CLI in 20 ms ones, and where an endpoint falls must not depend on that.
    joined = (work_dir() / "joined.wav").string();
    if (!fs::exists(joined)) {
      std::string command = "sox";
      for (std::size_t i = 0; i < kSentences.size(); ++i) {
        const fs::path raw = work_dir() / ("speech" + std::to_string(i) + ".raw.wav");
        command += " \"|sox " + raw.string() + " -r 16000 -c 1 -b 16 -t wav - pad 0.3 0.8\"";
      }
      command += " " + joined;
      if (run_shell(command) != 0) setup_error = "joining the sentences failed: " + command;
    }
  }

 public:
  std::string joined;
};

// The text the Recognizer gives for `speech` on its own, fed in the same frame sizes.
inline std::string reference_text(const Speech& speech, std::size_t frame_bytes,
                                  const std::string& engine = "") {
  stream::RecognizerConfig config;
  config.engine_path = engine.empty() ? Assets::get().engine : engine;
  config.max_streams = 1;
  auto recognizer = stream::Recognizer::create(config);
  EXPECT_TRUE(recognizer.has_value()) << recognizer.status().message();
  stream::StreamOptions options;
  options.sample_rate_hz = speech.sample_rate_hz;
  auto st = (*recognizer)->open_stream(options);
  EXPECT_TRUE(st.has_value());
  auto decoder = *audio::PcmChunkDecoder::create(audio::PcmEncoding::kS16LE, 1);
  std::vector<stream::Stream*> streams = {st->get()};
  std::string text;
  auto collect = [&] {
    for (const auto& r : (*st)->take_results()) {
      if (r.result.is_final && !r.result.text.empty())
        text += (text.empty() ? "" : " ") + r.result.text;
    }
  };
  for (std::size_t at = 0; at < speech.pcm16.size(); at += frame_bytes) {
    std::vector<float> samples;
    const std::size_t end = std::min(speech.pcm16.size(), at + frame_bytes);
    decoder.push(std::span<const std::uint8_t>(speech.pcm16.data() + at, end - at), samples);
    EXPECT_TRUE((*st)->accept_pcm(samples).is_ok());
    EXPECT_TRUE((*recognizer)->advance(streams).has_value());
    collect();
  }
  EXPECT_TRUE((*st)->input_finished().is_ok());
  EXPECT_TRUE((*recognizer)->advance(streams).has_value());
  collect();
  return text;
}

// ---- a synchronous WebSocket client ----------------------------------------------------------

class Client {
 public:
  // Empty string on success, else why the connection or handshake failed.
  std::string connect(int port, const std::string& token = "", const std::string& path = "/",
                      const std::string& source_ip = "") {
    beast::error_code ec;
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
    if (!source_ip.empty()) {
      // Another loopback address (127.0.0.0/8) stands for another client machine.
      ws_.next_layer().open(tcp::v4(), ec);
      if (!ec) ws_.next_layer().bind(tcp::endpoint(net::ip::make_address(source_ip), 0), ec);
      if (ec) return "bind: " + ec.message();
    }
    ws_.next_layer().connect(endpoint, ec);
    if (ec) return "connect: " + ec.message();
    ws_.set_option(websocket::stream_base::decorator([token](websocket::request_type& request) {
      if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
    }));
    websocket::response_type response;
    ws_.handshake(response, "127.0.0.1", path, ec);
    if (ec) return "handshake: " + ec.message();
    return "";
  }
  bool send_text(const std::string& text) {
    beast::error_code ec;
    ws_.text(true);
    ws_.write(net::buffer(text), ec);
    return !ec;
  }
  // One text message sent as several frames (continuation frames), as browsers may.
  bool send_text_fragments(const std::vector<std::string>& pieces) {
    beast::error_code ec;
    ws_.text(true);
    for (std::size_t i = 0; i < pieces.size() && !ec; ++i) {
      ws_.write_some(i + 1 == pieces.size(), net::buffer(pieces[i]), ec);
    }
    return !ec;
  }
  bool send_binary(const std::uint8_t* data, std::size_t size) {
    beast::error_code ec;
    ws_.binary(true);
    ws_.write(net::buffer(data, size), ec);
    return !ec;
  }
  // The next message as JSON; nullopt when the connection closed (close_code() says how).
  std::optional<json> read() {
    beast::flat_buffer buffer;
    beast::error_code ec;
    ws_.read(buffer, ec);
    if (ec) {
      closed_ = true;
      return std::nullopt;
    }
    return json::parse(beast::buffers_to_string(buffer.data()), nullptr, false);
  }
  int close_code() const { return ws_.reason().code; }
  std::string close_reason() const { return std::string(ws_.reason().reason.c_str()); }
  bool ping() {
    beast::error_code ec;
    ws_.ping({}, ec);
    return !ec;
  }
  // Unblocks a write or read stuck in another thread (the socket stays open until destroyed).
  void shutdown_socket() {
    beast::error_code ec;
    ws_.next_layer().shutdown(tcp::socket::shutdown_both, ec);
  }
  // Drops the TCP connection without a close handshake (a vanished client).
  void vanish() {
    beast::error_code ec;
    ws_.next_layer().close(ec);
  }
  void close() {
    beast::error_code ec;
    if (!closed_) ws_.close(websocket::close_code::normal, ec);
  }

 private:
  net::io_context io_;
  websocket::stream<tcp::socket> ws_{io_};
  bool closed_ = false;
};

struct StreamOutcome {
  std::string text;  // non-empty finals joined by spaces
  int frames = 0;
  int replies = 0;
  int finals = 0;
  int close_code = 0;
  std::vector<json> messages;
};

// Vosk-style client: one reply read after every frame, then eof and the final.
inline StreamOutcome stream_speech(int port, const Speech& speech, std::size_t frame_bytes,
                                   bool words = false, const std::string& path = "/") {
  StreamOutcome out;
  Client client;
  const std::string error = client.connect(port, "", path);
  EXPECT_EQ(error, "");
  if (!error.empty()) return out;
  client.send_text(
      json{{"config", {{"sample_rate", speech.sample_rate_hz}, {"words", words}}}}.dump());
  auto take = [&](const json& m) {
    out.messages.push_back(m);
    if (m.contains("text")) {
      ++out.finals;
      const std::string t = m["text"].get<std::string>();
      if (!t.empty()) out.text += (out.text.empty() ? "" : " ") + t;
    }
  };
  for (std::size_t at = 0; at < speech.pcm16.size(); at += frame_bytes) {
    const std::size_t end = std::min(speech.pcm16.size(), at + frame_bytes);
    EXPECT_TRUE(client.send_binary(speech.pcm16.data() + at, end - at));
    ++out.frames;
    auto reply = client.read();
    EXPECT_TRUE(reply.has_value());
    if (!reply) return out;
    ++out.replies;
    take(*reply);
  }
  client.send_text(R"({"eof" : 1})");
  const std::size_t before_eof = out.messages.size();
  while (auto reply = client.read()) take(*reply);
  if (std::getenv("VOXRT_TEST_DEBUG")) {
    std::cerr << "frames " << out.frames << " messages " << out.messages.size() << " after eof "
              << out.messages.size() - before_eof << "\n";
    for (const auto& m : out.messages)
      if (m.contains("text")) std::cerr << m.dump() << "\n";
  }
  out.close_code = client.close_code();
  return out;
}

inline int free_port() {
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

// An in-process server on a free port, run on its own thread.
class RunningServer {
 public:
  explicit RunningServer(ServerConfig config = {}, int io_threads = 2) {
    config.recognizer.engine_path = Assets::get().engine;
    config.port = 0;
    config.io_threads = io_threads;
    auto created = Server::create(config);
    EXPECT_TRUE(created.has_value()) << created.status().message();
    server_ = std::move(*created);
    thread_ = std::thread([this] { (void)server_->run(); });
  }
  ~RunningServer() {
    server_->shutdown();
    thread_.join();
  }
  Server& operator*() { return *server_; }
  Server* operator->() { return server_.get(); }
  // Polls until the state slots return to `expected` (streams close asynchronously).
  // Waits (up to 3 s) until `expected` streams are admitted.
  bool admitted_streams_reach(int expected) {
    for (int i = 0; i < 300; ++i) {
      if (server_->active_streams() == expected) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  bool slots_return_to(int expected) {
    for (int i = 0; i < 300; ++i) {
      if (server_->slots_in_use() == expected && server_->active_streams() == expected) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

 private:
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

// One HTTP request; returns status and body.
inline std::pair<int, std::string> http_request(int port, http::verb verb,
                                                const std::string& target,
                                                const std::string& body = "",
                                                const std::string& content_type = "",
                                                const std::string& token = "") {
  net::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  stream.connect(
      tcp::endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)), ec);
  if (ec) return {0, ec.message()};
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, "127.0.0.1");
  if (!content_type.empty()) request.set(http::field::content_type, content_type);
  if (!token.empty()) request.set(http::field::authorization, "Bearer " + token);
  request.body() = body;
  request.prepare_payload();
  http::write(stream, request, ec);
  beast::flat_buffer buffer;
  http::response<http::string_body> response;
  http::read(stream, buffer, response, ec);
  if (ec) return {0, ec.message()};
  return {response.result_int(), response.body()};
}

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(Assets::get().setup_error, ""); }
  const std::vector<Speech>& speech() { return Assets::get().speech; }
};

// 20 ms of PCM16 at the clip's rate.
inline std::size_t frame_20ms(const Speech& s) {
  return static_cast<std::size_t>(s.sample_rate_hz) / 50 * 2;
}

class ChildProcess {
 public:
  explicit ChildProcess(std::vector<std::string> args, const std::string& log) {
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~ChildProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)wait();
    }
  }
  pid_t pid() const { return pid_; }
  // Exit status, or -1.
  int wait() {
    int status = 0;
    if (pid_ <= 0 || ::waitpid(pid_, &status, 0) != pid_) return -1;
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  pid_t pid_ = -1;
};

inline bool wait_for_health(int port) {
  for (int i = 0; i < 200; ++i) {
    if (http_request(port, http::verb::get, "/healthz").first == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

}  // namespace voxrt::server::server_test
