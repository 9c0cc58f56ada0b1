// voxrt serve end to end: real WebSocket clients (Beast) against the server library on a free
// loopback port, the voxrt binary for SIGTERM and behind nginx. The engine is the default model,
// compiled with `voxrt build` at setup; speech comes from espeak-ng + sox at test time.
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
#include <thread>

#include "audio/audio_io.h"
#include "server/io_context_pool.h"
#include "server/load_generator.h"
#include "server/server.h"
#include "stream/recognizer.h"

extern char** environ;

namespace voxrt::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
namespace fs = std::filesystem;

std::string env_or(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value ? value : fallback;
}
fs::path source_dir() {
  return env_or("VOXRT_SOURCE_DIR", ".");
}
fs::path binary_dir() {
  return env_or("VOXRT_BINARY_DIR", ".");
}
fs::path work_dir() {
  return binary_dir() / "tests" / "server_work";
}
fs::path voxrt_binary() {
  return binary_dir() / "bin" / "voxrt";
}

int run_shell(const std::string& command) {
  return std::system(command.c_str());
}

// ---- fixtures: engine and speech -------------------------------------------------------------

struct Speech {
  std::string path;
  std::vector<std::uint8_t> pcm16;
  int sample_rate_hz = 16000;
};

const std::vector<std::string> kSentences = {
    "the quick brown fox jumps over the lazy dog",
    "please call stella and ask her to bring these things with her from the store",
    "she sells sea shells by the sea shore",
    "turn on the lights in the kitchen",
};

Speech load_speech(const std::string& path) {
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
    if (!fs::exists(engine)) {
      const std::string command = voxrt_binary().string() + " build --onnx " +
                                  (source_dir() / "models/default/model.onnx").string() +
                                  " --engine " + engine +
                                  " --profile features:1x2x80/8x32x80/64x32x80 > " +
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
  }
};

// The text the Recognizer gives for `speech` on its own, fed in the same frame sizes.
std::string reference_text(const Speech& speech, std::size_t frame_bytes) {
  stream::RecognizerConfig config;
  config.engine_path = Assets::get().engine;
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
  std::string connect(int port, const std::string& token = "", const std::string& path = "/") {
    beast::error_code ec;
    tcp::endpoint endpoint(net::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port));
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
StreamOutcome stream_speech(int port, const Speech& speech, std::size_t frame_bytes,
                            bool words = false) {
  StreamOutcome out;
  Client client;
  const std::string error = client.connect(port);
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

int free_port() {
  net::io_context io;
  tcp::acceptor acceptor(io, tcp::endpoint(net::ip::make_address("127.0.0.1"), 0));
  return acceptor.local_endpoint().port();
}

// An in-process server on a free port, run on its own thread.
class RunningServer {
 public:
  explicit RunningServer(ServerConfig config = {}) {
    config.recognizer.engine_path = Assets::get().engine;
    config.port = 0;
    config.io_threads = 2;
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
std::pair<int, std::string> http_request(int port, http::verb verb, const std::string& target,
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
std::size_t frame_20ms(const Speech& s) {
  return static_cast<std::size_t>(s.sample_rate_hz) / 50 * 2;
}

// ---- tests -------------------------------------------------------------------------------------

TEST_F(ServerTest, ProtocolRoundTripMatchesTheRecognizerAlone) {
  RunningServer server;
  for (const Speech& s : speech()) {
    const StreamOutcome got = stream_speech(server->port(), s, frame_20ms(s), /*words=*/true);
    // One reply per frame (Vosk clients wait for it), then the final, then a normal close.
    EXPECT_EQ(got.replies, got.frames) << s.path;
    ASSERT_FALSE(got.messages.empty());
    std::string tail;
    for (std::size_t i = got.messages.size() > 4 ? got.messages.size() - 4 : 0;
         i < got.messages.size(); ++i)
      tail += got.messages[i].dump() + " ";
    EXPECT_TRUE(got.messages.back().contains("text")) << tail;
    EXPECT_EQ(got.close_code, 1000);
    for (const json& m : got.messages) {
      EXPECT_TRUE(m.contains("partial") || m.contains("text")) << m.dump();
      if (m.contains("text")) {
        ASSERT_TRUE(m.contains("result")) << "words:true asks for word results";
        for (const json& w : m["result"]) {
          EXPECT_LE(w["start"].get<double>(), w["end"].get<double>());
          EXPECT_GT(w["conf"].get<double>(), 0.0);
          EXPECT_LE(w["conf"].get<double>(), 1.0);
        }
      }
    }
    EXPECT_EQ(got.text, reference_text(s, frame_20ms(s))) << s.path;
  }
  EXPECT_TRUE(server.slots_return_to(0));
}

TEST_F(ServerTest, ConcurrentStreamsGiveTheSameTextAsAlone) {
  // Odd frame sizes: samples split across frames must be carried over.
  const std::vector<std::size_t> frame_sizes = {333, 641, 1001, 4097, 77};
  std::vector<std::string> alone;
  for (std::size_t i = 0; i < speech().size(); ++i)
    alone.push_back(reference_text(speech()[i], 640));
  // The second server feeds streams and builds replies on a pool of front-end threads; the third
  // runs two compute workers (two engine instances), streams spread over both.
  struct Variant {
    int front_end_threads;
    const char* devices;
  };
  for (const Variant variant : {Variant{1, "auto"}, Variant{3, "auto"}, Variant{1, "cpu,cpu"}}) {
    const int front_end_threads = variant.front_end_threads;
    ServerConfig config;
    config.max_queue_delay_us = 2000;
    config.front_end_threads = front_end_threads;
    config.devices = *parse_devices(variant.devices);
    RunningServer server(config);
    constexpr int kStreams = 16;
    std::vector<std::future<StreamOutcome>> futures;
    for (int i = 0; i < kStreams; ++i) {
      const Speech& s = speech()[static_cast<std::size_t>(i) % speech().size()];
      const std::size_t frame = frame_sizes[static_cast<std::size_t>(i) % frame_sizes.size()];
      futures.push_back(std::async(std::launch::async, [&server, &s, frame] {
        return stream_speech(server->port(), s, frame);
      }));
    }
    for (int i = 0; i < kStreams; ++i) {
      const StreamOutcome got = futures[static_cast<std::size_t>(i)].get();
      EXPECT_EQ(got.text, alone[static_cast<std::size_t>(i) % speech().size()])
          << "stream " << i << ", front_end_threads " << front_end_threads << ", devices "
          << variant.devices;
      EXPECT_EQ(got.replies, got.frames);
      EXPECT_EQ(got.close_code, 1000);
    }
    EXPECT_TRUE(server.slots_return_to(0));
    const std::string metrics = server->metrics().serialize();
    EXPECT_NE(metrics.find("voxrt_batch_size_count"), std::string::npos);
    EXPECT_NE(metrics.find("voxrt_chunks_total"), std::string::npos);
    // Every worker counts its streams up and down on the shared gauges.
    EXPECT_NE(metrics.find("voxrt_active_streams 0\n"), std::string::npos) << metrics;
    EXPECT_NE(metrics.find("voxrt_state_slots_in_use 0\n"), std::string::npos) << metrics;
  }
}

// One io_context per network thread: next() deals connections round-robin, every context runs
// on its own thread, and stop() from any handler ends them all, work or not.
TEST(IoContextPool, RoundRobinOneThreadPerContextAndStopEndsAll) {
  IoContextPool pool(3);
  ASSERT_EQ(pool.size(), 3);
  std::vector<boost::asio::io_context*> order;
  for (int i = 0; i < 6; ++i) order.push_back(&pool.next());
  EXPECT_EQ(order[0], order[3]);
  EXPECT_NE(order[0], order[1]);
  EXPECT_NE(order[1], order[2]);
  EXPECT_NE(order[0], order[2]);
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::atomic<int> ran{0};
  for (int i = 0; i < 3; ++i) {
    boost::asio::post(*order[static_cast<std::size_t>(i)], [&] {
      {
        std::lock_guard lock(mutex);
        threads.insert(std::this_thread::get_id());
      }
      // The last of the three stops every context, although kept alive.
      if (ran.fetch_add(1) == 2) pool.stop();
    });
  }
  pool.run("voxrt-test-io", /*keep_alive=*/true);
  EXPECT_EQ(ran.load(), 3);
  EXPECT_EQ(threads.size(), 3u);
}

TEST(ServerDevices, ParseDevicesAcceptsCpuListsAndGpuOrdinalsAndSaysWhatIsWrong) {
  EXPECT_TRUE(parse_devices("auto")->empty());
  ASSERT_EQ(parse_devices("cpu")->size(), 1u);
  EXPECT_FALSE((*parse_devices("cpu"))[0].cuda);
  const auto gpus = parse_devices("0,1,3");
  ASSERT_TRUE(gpus);
  ASSERT_EQ(gpus->size(), 3u);
  EXPECT_TRUE((*gpus)[2].cuda);
  EXPECT_EQ((*gpus)[2].ordinal, 3);
  EXPECT_EQ((*gpus)[1].to_string(), "cuda:1");
  EXPECT_EQ(parse_devices("0,0")->size(), 2u);  // two engine instances on one GPU
  for (const char* bad : {"", "gpu", "cpu,0", "-1", "1x", "0,,1", "256"}) {
    const auto parsed = parse_devices(bad);
    ASSERT_FALSE(parsed) << bad;
    EXPECT_NE(parsed.status().message().find("--devices"), std::string::npos)
        << parsed.status().message();
  }
}

TEST(ServerDevices, AGpuListWithoutACudaBackendOrWithACpuEngineIsRefused) {
  // This test program registers no CUDA backend, and the engine is a CPU engine: either way the
  // server must refuse to start and say why.
  ServerConfig config;
  config.recognizer.engine_path = Assets::get().engine;
  config.port = 0;
  config.devices = *parse_devices("0");
  auto created = Server::create(config);
  ASSERT_FALSE(created);
  EXPECT_NE(created.status().message().find("compute worker 0 (cuda:0)"), std::string::npos)
      << created.status().message();
}

struct BadCase {
  const char* name;
  std::function<void(Client&)> misbehave;
  const char* kind;  // the error kind the server names before it closes
  int close_code;
};

TEST_F(ServerTest, BadInputClosesThatStreamOnlyAndSlotsReturn) {
  ServerConfig config;
  config.max_message_bytes = 64 * 1024;
  RunningServer server(config);
  const Speech& good = speech()[1];
  const std::string expected = reference_text(good, frame_20ms(good));
  std::vector<std::uint8_t> huge(200 * 1024, 0);
  const std::vector<BadCase> cases = {
      {"invalid json", [](Client& c) { c.send_text("{\"config\": "); }, "invalid_json", 1003},
      {"not an object", [](Client& c) { c.send_text("[1, 2]"); }, "bad_message", 1003},
      {"sample_rate string",
       [](Client& c) { c.send_text(R"({"config": {"sample_rate": "fast"}})"); }, "bad_config",
       1008},
      {"sample_rate 0", [](Client& c) { c.send_text(R"({"config": {"sample_rate": 0}})"); },
       "bad_config", 1008},
      {"sample_rate 1e9",
       [](Client& c) { c.send_text(R"({"config": {"sample_rate": 1000000000}})"); }, "bad_config",
       1008},
      {"words not bool", [](Client& c) { c.send_text(R"({"config": {"words": "yes"}})"); },
       "bad_config", 1008},
      {"phrase_list not strings",
       [](Client& c) { c.send_text(R"({"config": {"phrase_list": [1]}})"); }, "bad_config", 1008},
      {"eof 0", [](Client& c) { c.send_text(R"({"eof": 0})"); }, "bad_message", 1003},
      {"config twice",
       [](Client& c) {
         c.send_text(R"({"config": {"sample_rate": 16000}})");
         c.send_text(R"({"config": {"sample_rate": 8000}})");
       },
       "bad_config", 1008},
      {"huge frame", [&huge](Client& c) { c.send_binary(huge.data(), huge.size()); },
       "message_too_big", 1009},
      {"huge text split over frames",
       [](Client& c) {
         const std::string piece(40 * 1024, ' ');
         c.send_text_fragments({piece, piece});
       },
       "message_too_big", 1009},
  };
  for (const BadCase& bad : cases) {
    // A well-behaved stream runs next to the bad one and must not notice it.
    auto neighbour = std::async(
        std::launch::async, [&] { return stream_speech(server->port(), good, frame_20ms(good)); });
    Client client;
    ASSERT_EQ(client.connect(server->port()), "") << bad.name;
    bad.misbehave(client);
    std::optional<json> error;
    while (auto m = client.read()) {
      if (m->contains("error")) error = *m;
    }
    ASSERT_TRUE(error.has_value()) << bad.name;
    EXPECT_EQ((*error)["kind"], bad.kind) << bad.name << ": " << error->dump();
    EXPECT_EQ(client.close_code(), bad.close_code) << bad.name;
    const StreamOutcome n = neighbour.get();
    EXPECT_EQ(n.text, expected) << "neighbour of " << bad.name;
    EXPECT_TRUE(server.slots_return_to(0)) << bad.name;
  }
}

TEST_F(ServerTest, VanishingClientAndBinaryBeforeConfig) {
  RunningServer server;
  const Speech& s = speech()[0];
  {
    Client client;
    ASSERT_EQ(client.connect(server->port()), "");
    // No config: 16 kHz by default, like Vosk's server; an odd byte count is carried over.
    ASSERT_TRUE(client.send_binary(s.pcm16.data(), 16001));
    auto reply = client.read();
    ASSERT_TRUE(reply.has_value());
    EXPECT_TRUE(reply->contains("partial")) << reply->dump();
    EXPECT_EQ(server->slots_in_use(), 1);
    client.vanish();
  }
  EXPECT_TRUE(server.slots_return_to(0));
  EXPECT_NE(server->metrics().serialize().find("kind=\"client_gone\""), std::string::npos);
  // The server still serves.
  const StreamOutcome got = stream_speech(server->port(), s, frame_20ms(s));
  EXPECT_EQ(got.text, reference_text(s, frame_20ms(s)));
}

TEST_F(ServerTest, MaxStreamsRefusesWithReason) {
  ServerConfig config;
  config.recognizer.max_streams = 2;
  RunningServer server(config);
  Client a, b, c;
  ASSERT_EQ(a.connect(server->port()), "");
  ASSERT_EQ(b.connect(server->port()), "");
  // A client's handshake completes before the server's accept handler admits its stream, and
  // the sessions may run on different I/O threads: without this wait c could be admitted ahead
  // of a or b (seen once in CI on a loaded machine), and the refusal would go to one of them.
  ASSERT_TRUE(server.admitted_streams_reach(2));
  ASSERT_EQ(c.connect(server->port()), "");
  auto refusal = c.read();
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ((*refusal)["kind"], "max_streams") << refusal->dump();
  EXPECT_FALSE(c.read().has_value());
  EXPECT_EQ(c.close_code(), 1013);
  auto [status, body] = http_request(server->port(), http::verb::get, "/readyz");
  EXPECT_EQ(status, 503);
  a.close();
  b.close();
  EXPECT_TRUE(server.slots_return_to(0));
  EXPECT_EQ(http_request(server->port(), http::verb::get, "/readyz").first, 200);
  EXPECT_NE(server->metrics().serialize().find("kind=\"max_streams\""), std::string::npos);
}

TEST_F(ServerTest, BearerTokenIdleTimeoutAndHttpEndpoints) {
  ServerConfig config;
  config.auth_token = "s3cret-token";
  config.idle_timeout_s = 1;
  RunningServer server(config);
  const int port = server->port();
  {
    Client client;
    EXPECT_NE(client.connect(port).find("declined"), std::string::npos);
  }
  {
    Client client;
    EXPECT_NE(client.connect(port, "wrong-token").find("declined"), std::string::npos);
  }
  EXPECT_EQ(http_request(port, http::verb::get, "/healthz").first, 200);
  EXPECT_EQ(http_request(port, http::verb::get, "/metrics").first, 401);
  auto [status, metrics] =
      http_request(port, http::verb::get, "/metrics", "", "", config.auth_token);
  EXPECT_EQ(status, 200);
  EXPECT_NE(metrics.find("voxrt_active_streams"), std::string::npos);
  // Both refused upgrades and the unauthenticated /metrics count.
  EXPECT_NE(metrics.find("voxrt_refusals_total{kind=\"unauthorized\"} 3"), std::string::npos)
      << metrics;
  EXPECT_EQ(http_request(port, http::verb::get, "/nope").first, 404);
  {
    Client client;
    ASSERT_EQ(client.connect(port, config.auth_token), "");
    ASSERT_TRUE(client.send_text(R"({"config": {"sample_rate": 16000}})"));
    const auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(client.read().has_value());  // nothing sent: closed by the idle timeout
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  EXPECT_TRUE(server.slots_return_to(0));
}

TEST_F(ServerTest, OpenAiTranscriptionUploadMatchesStreaming) {
  RunningServer server;
  const Speech& s = speech()[2];
  std::ifstream in(s.path, std::ios::binary);
  const std::string wav((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string boundary = "voxrtBoundary7MA4YWxk";
  auto body = [&](const std::string& format) {
    return "--" + boundary +
           "\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nvoxrt-default\r\n--" +
           boundary + "\r\nContent-Disposition: form-data; name=\"response_format\"\r\n\r\n" +
           format + "\r\n--" + boundary +
           "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"a.wav\"\r\n"
           "Content-Type: audio/wav\r\n\r\n" +
           wav + "\r\n--" + boundary + "--\r\n";
  };
  const std::string content_type = "multipart/form-data; boundary=" + boundary;
  const std::string expected = reference_text(s, 32000);
  auto [status, reply] = http_request(server->port(), http::verb::post, "/v1/audio/transcriptions",
                                      body("json"), content_type);
  ASSERT_EQ(status, 200) << reply;
  EXPECT_EQ(json::parse(reply)["text"], expected);
  auto [text_status, text] = http_request(server->port(), http::verb::post,
                                          "/v1/audio/transcriptions", body("text"), content_type);
  EXPECT_EQ(text_status, 200);
  EXPECT_EQ(text, expected + "\n");
  auto [verbose_status, verbose] =
      http_request(server->port(), http::verb::post, "/v1/audio/transcriptions",
                   body("verbose_json"), content_type);
  EXPECT_EQ(verbose_status, 200);
  EXPECT_TRUE(json::parse(verbose).contains("segments")) << verbose;
  EXPECT_EQ(http_request(server->port(), http::verb::post, "/v1/audio/transcriptions", "junk",
                         content_type)
                .first,
            400);
  EXPECT_TRUE(server.slots_return_to(0));
}

TEST_F(ServerTest, ThrottlesAClientFasterThanRealTime) {
  ServerConfig config;
  config.max_buffered_ms = 500;
  RunningServer server(config);
  const Speech& s = speech()[1];
  Client client;
  ASSERT_EQ(client.connect(server->port()), "");
  client.send_text(R"({"config": {"sample_rate": 16000}})");
  // The whole clip in 100 ms frames without waiting for replies: reads pause, nothing is lost.
  int frames = 0;
  std::thread sender([&] {
    for (std::size_t at = 0; at < s.pcm16.size(); at += 3200, ++frames)
      client.send_binary(s.pcm16.data() + at, std::min<std::size_t>(3200, s.pcm16.size() - at));
  });
  sender.join();
  client.send_text(R"({"eof": 1})");
  std::string text;
  bool warned = false;
  int replies = 0;
  while (auto m = client.read()) {
    ++replies;
    if (m->contains("warning") && (*m)["warning"].get<std::string>().rfind("throttled", 0) == 0)
      warned = true;
    if (m->contains("text") && !(*m)["text"].get<std::string>().empty())
      text += (text.empty() ? "" : " ") + (*m)["text"].get<std::string>();
  }
  EXPECT_TRUE(warned);
  EXPECT_GE(replies, frames);
  EXPECT_EQ(text, reference_text(s, 3200));
  EXPECT_TRUE(server.slots_return_to(0));
}

// ---- the binary: SIGTERM drains, nginx in front ------------------------------------------------

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

bool wait_for_health(int port) {
  for (int i = 0; i < 200; ++i) {
    if (http_request(port, http::verb::get, "/healthz").first == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

TEST_F(ServerTest, SigtermDrainsLiveStreamsWithFinals) {
  const int port = free_port();
  ChildProcess server({voxrt_binary().string(), "serve", "--engine", Assets::get().engine, "--port",
                       std::to_string(port)},
                      (work_dir() / "serve_sigterm.log").string());
  ASSERT_TRUE(wait_for_health(port));
  const Speech& s = speech()[1];
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < 3; ++i) {
    clients.push_back(std::make_unique<Client>());
    ASSERT_EQ(clients.back()->connect(port), "");
    clients.back()->send_text(R"({"config": {"sample_rate": 16000}})");
    // Most of the clip, no eof: the stream is live when the signal comes.
    for (std::size_t at = 0; at + 640 <= s.pcm16.size() * 3 / 4; at += 640) {
      clients.back()->send_binary(s.pcm16.data() + at, 640);
      ASSERT_TRUE(clients.back()->read().has_value());
    }
  }
  ::kill(server.pid(), SIGTERM);
  for (auto& c : clients) {
    bool final_seen = false;
    while (auto m = c->read()) final_seen = final_seen || m->contains("text");
    EXPECT_TRUE(final_seen);
    EXPECT_EQ(c->close_code(), 1001);
  }
  EXPECT_EQ(server.wait(), 0);
}

TEST_F(ServerTest, BehindNginxWebSocketProxy) {
  if (run_shell("command -v nginx > /dev/null 2>&1") != 0) GTEST_SKIP() << "nginx not installed";
  const int server_port = free_port();
  ChildProcess server({voxrt_binary().string(), "serve", "--engine", Assets::get().engine, "--port",
                       std::to_string(server_port)},
                      (work_dir() / "serve_nginx.log").string());
  ASSERT_TRUE(wait_for_health(server_port));
  const int proxy_port = free_port();
  const fs::path prefix = work_dir() / "nginx";
  fs::create_directories(prefix / "logs");
  {
    std::ofstream conf(prefix / "nginx.conf");
    conf << "daemon off;\nworker_processes 1;\npid " << (prefix / "nginx.pid").string()
         << ";\nerror_log " << (prefix / "logs/error.log").string()
         << ";\nevents { worker_connections 64; }\nhttp {\n"
            "  access_log off;\n"
            "  client_body_temp_path "
         << (prefix / "body").string()
         << ";\n"
            "  proxy_temp_path "
         << (prefix / "proxy").string()
         << ";\n"
            "  map $http_upgrade $connection_upgrade { default upgrade; '' close; }\n"
            "  server {\n    listen 127.0.0.1:"
         << proxy_port
         << ";\n"
            "    location / {\n      proxy_pass http://127.0.0.1:"
         << server_port
         << ";\n"
            "      proxy_http_version 1.1;\n"
            "      proxy_set_header Upgrade $http_upgrade;\n"
            "      proxy_set_header Connection $connection_upgrade;\n"
            "      proxy_read_timeout 3600s;\n    }\n  }\n}\n";
  }
  ChildProcess nginx(
      {"/usr/sbin/nginx", "-p", prefix.string(), "-c", (prefix / "nginx.conf").string()},
      (prefix / "logs/stdout.log").string());
  ASSERT_TRUE(wait_for_health(proxy_port));
  const Speech& s = speech()[0];
  const StreamOutcome direct = stream_speech(server_port, s, frame_20ms(s));
  const StreamOutcome proxied = stream_speech(proxy_port, s, frame_20ms(s));
  EXPECT_EQ(proxied.text, direct.text);
  EXPECT_EQ(proxied.replies, proxied.frames);
  EXPECT_EQ(proxied.close_code, 1000);
  ::kill(nginx.pid(), SIGQUIT);
  (void)nginx.wait();
  ::kill(server.pid(), SIGTERM);
  EXPECT_EQ(server.wait(), 0);
}

TEST_F(ServerTest, LoadGeneratorMeasuresRealtimeStreamsAndRefusesOtherHosts) {
  EXPECT_FALSE(parse_loopback_url("ws://10.1.2.3:80/").has_value());
  EXPECT_FALSE(parse_loopback_url("ws://example.com:80/").has_value());
  EXPECT_TRUE(parse_loopback_url("ws://localhost:2700").has_value());
  EXPECT_TRUE(parse_loopback_url("ws://[::1]:2700/x").has_value());
  EXPECT_EQ(
      word_edit_distance(normalize_words("The cat sat."), normalize_words("the bat sat down")), 2);
  RunningServer server;
  const fs::path dir = work_dir() / "loadgen_wavs";
  fs::create_directories(dir);
  for (int i = 0; i < 2; ++i) {
    fs::copy_file(speech()[static_cast<std::size_t>(i)].path,
                  dir / ("s" + std::to_string(i) + ".wav"), fs::copy_options::overwrite_existing);
    std::ofstream(dir / ("s" + std::to_string(i) + ".txt"))
        << kSentences[static_cast<std::size_t>(i)];
  }
  LoadGenConfig config;
  config.url = "ws://127.0.0.1:" + std::to_string(server->port()) + "/";
  config.streams = 4;
  config.wav_dir = dir.string();
  config.realtime = true;
  // Three network threads, each with its own io_context: sessions spread over them, and the
  // last one to finish stops them all (a hang here would time the test out).
  config.threads = 3;
  auto report = run_load_generator(config);
  ASSERT_TRUE(report.has_value()) << report.status().message();
  EXPECT_EQ(report->completed, 4) << report->to_text();
  EXPECT_EQ(report->errors, 0);
  EXPECT_GT(report->chunk_latency.count, 100u);
  EXPECT_EQ(report->final_latency.count, 4u);
  EXPECT_GT(report->reference_words, 0);
  // Finals equal the Recognizer's own text for each file, so the WER is the model's.
  for (const auto& o : report->outcomes) {
    const Speech& s = o.file.find("s0.wav") != std::string::npos ? speech()[0] : speech()[1];
    EXPECT_EQ(o.text, reference_text(s, frame_20ms(s))) << o.file;
  }
  // Real-time pacing: 4 streams of a few seconds each take about as long as one clip.
  EXPECT_GT(report->wall_s, 0.9 * static_cast<double>(speech()[1].pcm16.size()) / 2 / 16000);
  EXPECT_TRUE(server.slots_return_to(0));
}

}  // namespace
}  // namespace voxrt::server
