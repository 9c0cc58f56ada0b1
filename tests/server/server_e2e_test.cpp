// voxrt serve end to end: real WebSocket clients (Beast) against the server library on a free
// loopback port, the voxrt binary for signals and behind nginx. The engine is the default model,
// compiled with `voxrt build` at setup; speech comes from espeak-ng + sox at test time.
#include "server_test_support.h"

// In the support's namespace: its StreamOutcome (one client's run) hides the load
// generator's.
namespace voxrt::server::server_test {
namespace {

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
      {"beam_width 0", [](Client& c) { c.send_text(R"({"config": {"beam_width": 0}})"); },
       "bad_config", 1008},
      {"lm_weight string", [](Client& c) { c.send_text(R"({"config": {"lm_weight": "x"}})"); },
       "bad_config", 1008},
      {"decoder unknown", [](Client& c) { c.send_text(R"({"config": {"decoder": "fast"}})"); },
       "bad_config", 1008},
      {"lm without one",
       [](Client& c) {
         c.send_text(R"({"config": {"lm": true}})");
         const std::vector<std::uint8_t> silence(640, 0);
         c.send_binary(silence.data(), silence.size());
       },
       "bad_config", 1008},
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
    // Nothing sent: the idle timeout ends the stream like an eof (its final, empty here), then
    // closes with a close frame that says why.
    auto final_message = client.read();
    ASSERT_TRUE(final_message.has_value());
    EXPECT_EQ((*final_message)["text"], "") << final_message->dump();
    EXPECT_FALSE(client.read().has_value());
    EXPECT_EQ(client.close_code(), 1000);
    EXPECT_EQ(client.close_reason(), "idle_timeout");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  }
  EXPECT_TRUE(server.slots_return_to(0));
}

TEST_F(ServerTest, OpenAiTranscriptionUploadMatchesStreaming) {
  RunningServer server;
  const Speech s = load_speech(Assets::get().joined);
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
  // The CLI feeds 20 ms pieces, the upload 1 s pieces: the same text (issue 31: the VAD's
  // endpoint fell by piece size and split "kitch" | "en").
  const fs::path cli_out = work_dir() / "joined_cli.jsonl";
  ASSERT_EQ(
      run_shell(voxrt_binary().string() + " transcribe --json --engine " + Assets::get().engine +
                " " + s.path + " > " + cli_out.string() + " 2> /dev/null"),
      0);
  std::string expected;
  std::ifstream cli_lines(cli_out);
  for (std::string line; std::getline(cli_lines, line);) {
    const json result = json::parse(line);
    const std::string text = result["text"];
    if (result["is_final"] && !text.empty()) expected += (expected.empty() ? "" : " ") + text;
  }
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(reference_text(s, 640), expected);
  EXPECT_EQ(reference_text(s, 32000), expected);
  auto [status, reply] = http_request(server->port(), http::verb::post, "/v1/audio/transcriptions",
                                      body("json"), content_type);
  ASSERT_EQ(status, 200) << reply;
  EXPECT_EQ(json::parse(reply)["text"], expected);
  // Subtitles as OpenAI's endpoint gives them: one cue per utterance.
  auto [srt_status, srt] = http_request(server->port(), http::verb::post,
                                        "/v1/audio/transcriptions", body("srt"), content_type);
  EXPECT_EQ(srt_status, 200);
  EXPECT_EQ(srt.rfind("1\n00:00:0", 0), 0u) << srt;
  EXPECT_NE(srt.find(" --> "), std::string::npos) << srt;
  EXPECT_NE(srt.find("\n2\n"), std::string::npos) << srt;
  auto [vtt_status, vtt] = http_request(server->port(), http::verb::post,
                                        "/v1/audio/transcriptions", body("vtt"), content_type);
  EXPECT_EQ(vtt_status, 200);
  EXPECT_EQ(vtt.rfind("WEBVTT\n\n00:00:0", 0), 0u) << vtt;
  EXPECT_EQ(http_request(server->port(), http::verb::post, "/v1/audio/transcriptions", body("docx"),
                         content_type)
                .first,
            400);
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

// A phrase the model cannot spell is a warning on the stream, not a closed stream (issue 31); the
// others are normalised (case, punctuation) and used. Hotwords switch the stream to beam search.
TEST_F(ServerTest, PhraseTheModelCannotSpellIsAWarning) {
  RunningServer server;
  const Speech& s = speech()[3];
  Client client;
  ASSERT_EQ(client.connect(server->port()), "");
  client.send_text(json{{"config",
                         {{"sample_rate", s.sample_rate_hz},
                          {"phrase_list", {"caf\u00e9 au lait", "Turn ON the lights!"}}}}}
                       .dump());
  std::vector<json> messages;
  const std::size_t frame = frame_20ms(s);
  for (std::size_t at = 0; at < s.pcm16.size(); at += frame) {
    ASSERT_TRUE(client.send_binary(s.pcm16.data() + at, std::min(frame, s.pcm16.size() - at)));
    auto reply = client.read();
    ASSERT_TRUE(reply.has_value());
    messages.push_back(*reply);
  }
  client.send_text(R"({"eof": 1})");
  while (auto reply = client.read()) messages.push_back(*reply);
  EXPECT_EQ(client.close_code(), 1000);
  std::string warnings, text;
  for (const json& m : messages) {
    EXPECT_FALSE(m.contains("error")) << m.dump();
    if (m.contains("warning")) warnings += m["warning"].get<std::string>();
    if (m.contains("text")) text += m["text"].get<std::string>();
  }
  EXPECT_NE(warnings.find("phrase_list[0] ignored"), std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("phrase_list[1]"), std::string::npos) << warnings;
  EXPECT_FALSE(text.empty());
  EXPECT_TRUE(server.slots_return_to(0));
}

// serve --lm: streams decode with the LM (here words of the LM only), and a stream may choose
// greedy decoding or the beam without the LM in its config. --max-batch above the engine's
// profiles is refused when the server starts.
TEST_F(ServerTest, ServeTakesAnLmAndStreamsChooseTheirDecoding) {
  const fs::path arpa = work_dir() / "words.arpa";
  std::ofstream(arpa) << "\\data\\\nngram 1=8\n\n\\1-grams:\n-1 <s>\n-1 </s>\n-1 turn\n"
                         "-1 on\n-1 the\n-1 lights\n-1 in\n-1 kitchen\n\n\\end\\\n";
  ServerConfig config;
  config.recognizer.decoder = stream::DecoderKind::kBeam;
  config.recognizer.lm_path = arpa.string();
  config.recognizer.decoding.lexicon_only = true;
  RunningServer server(config);
  const Speech& s = speech()[3];
  const std::set<std::string> lm_words = {"turn", "on", "the", "lights", "in", "kitchen"};
  auto words_of = [](const std::string& text) {
    std::istringstream in(text);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  const StreamOutcome with_lm = stream_speech(server->port(), s, frame_20ms(s));
  ASSERT_FALSE(with_lm.text.empty());
  for (const std::string& w : words_of(with_lm.text))
    EXPECT_TRUE(lm_words.count(w)) << w << " in '" << with_lm.text << "'";
  // The same audio decoded greedily by a stream that asks for it: the greedy reference.
  Client client;
  ASSERT_EQ(client.connect(server->port()), "");
  client.send_text(
      json{{"config", {{"sample_rate", s.sample_rate_hz}, {"decoder", "greedy"}}}}.dump());
  std::string greedy_text;
  auto take = [&](const json& m) {
    EXPECT_FALSE(m.contains("error")) << m.dump();
    if (m.contains("text") && !m["text"].get<std::string>().empty())
      greedy_text += (greedy_text.empty() ? "" : " ") + m["text"].get<std::string>();
  };
  const std::size_t frame = frame_20ms(s);
  for (std::size_t at = 0; at < s.pcm16.size(); at += frame) {
    ASSERT_TRUE(client.send_binary(s.pcm16.data() + at, std::min(frame, s.pcm16.size() - at)));
    auto reply = client.read();
    ASSERT_TRUE(reply.has_value());
    take(*reply);
  }
  client.send_text(R"({"eof": 1})");
  while (auto m = client.read()) take(*m);
  EXPECT_EQ(greedy_text, reference_text(s, frame));
  EXPECT_TRUE(server.slots_return_to(0));

  ServerConfig too_big;
  too_big.recognizer.engine_path = Assets::get().engine;
  too_big.port = 0;
  too_big.recognizer.max_batch = 65;  // the engine's profiles go up to 64
  auto refused = Server::create(too_big);
  ASSERT_FALSE(refused.has_value());
  EXPECT_NE(refused.status().message().find("max_batch 65 is above the largest batch"),
            std::string::npos)
      << refused.status().message();
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
}  // namespace voxrt::server::server_test
