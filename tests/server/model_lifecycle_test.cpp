// The model lifecycle (docs/model_repository.md): `voxrt deploy` builds, gates and publishes
// versions of a model in a repository; `voxrt serve --repo` picks them up without a restart.
// Version 1 is the default model, version 2 the null model of bench/server (the same contract,
// other text), so which version answered a stream shows in its text.
#include <sys/wait.h>

#include <cstdio>

#include "runtime/device_plugin.h"
#include "server_test_support.h"

namespace voxrt::server::server_test {
namespace {

using Clock = std::chrono::steady_clock;

fs::path lifecycle_dir() {
  return work_dir() / "lifecycle";
}

// Runs `voxrt deploy ARGS --json` and returns its exit code and JSON report.
std::pair<int, json> deploy(const std::string& args) {
  const fs::path out = lifecycle_dir() / "deploy_out.json";
  const fs::path log = lifecycle_dir() / "deploy.log";
  const int status = run_shell(voxrt_binary().string() + " deploy " + args + " --json > " +
                               out.string() + " 2>> " + log.string());
  std::ifstream in(out);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, json::parse(text, nullptr, false)};
}

std::string failed_step(const json& report) {
  if (!report.is_object() || !report.contains("steps")) return "(no report)";
  for (const auto& step : report["steps"])
    if (!step["ok"].get<bool>()) return step["step"].get<std::string>();
  return "";
}

void write_file(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

// The repository, made once: default/1 (the default model, with an accuracy and a latency
// gate on three spoken sentences) and default/2 (the null model, latency gate only).
class Repository {
 public:
  static Repository& get() {
    static Repository repository;
    return repository;
  }
  fs::path root;
  fs::path null_model;
  std::string setup_error;

  fs::path version(int v) const { return root / "default" / std::to_string(v); }

 private:
  Repository() {
    fs::remove_all(lifecycle_dir());
    fs::create_directories(lifecycle_dir());
    root = lifecycle_dir() / "repo";
    null_model = lifecycle_dir() / "null_model.onnx";
    const std::string make_null =
        python() + " " + (source_dir() / "bench/server/make_null_model.py").string() + " " +
        null_model.string() + " " + (source_dir() / "models/default/model.onnx").string();
    if (run_shell(make_null) != 0) {
      setup_error = "failed: " + make_null;
      return;
    }
    std::string manifest;
    for (int i = 0; i < 3; ++i) {
      const Speech& s = Assets::get().speech[static_cast<std::size_t>(i)];
      manifest += s.path + "\t" + kSentences[static_cast<std::size_t>(i)] + "\n";
    }
    write_file(root / "eval" / "manifest.tsv", manifest);
    fs::create_directories(version(1));
    fs::copy_file(source_dir() / "models/default/model.onnx", version(1) / "model.onnx");
    // The gate is set to catch a model that does not work at all, not to grade this one (the
    // default model's measured WER is in models/default/MODEL_CARD.md).
    write_file(version(1) / "build.json", R"({
  "profiles": ["features:1x4x80/8x32x80/64x32x80"],
  "autotune": false,
  "gates": {"accuracy": {"manifest": "../../eval/manifest.tsv", "max_wer": 0.9},
            "latency": {"max_p99_ms": 2000, "batch": 8}}
})");
    fs::create_directories(version(2));
    fs::copy_file(null_model, version(2) / "model.onnx");
    write_file(version(2) / "build.json", R"({
  "profiles": ["features:1x4x80/8x32x80/64x32x80"],
  "autotune": false,
  "gates": {"latency": {"max_p99_ms": 2000, "batch": 8}}
})");
  }
};

class ModelLifecycle : public ServerTest {
 protected:
  void SetUp() override {
    ServerTest::SetUp();
    ASSERT_EQ(Repository::get().setup_error, "");
  }
  Repository& repo() { return Repository::get(); }
};

// Polls until `model` serves exactly `versions` (newest first).
bool serves(Server& server, const std::vector<int>& versions, int seconds = 30,
            const std::string& model = "default") {
  const auto deadline = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < deadline) {
    if (server.models().serving_versions(model) == versions) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

std::string engine_of(const json& report) {
  return report.value("engine", std::string());
}

TEST_F(ModelLifecycle, DeployServePublishRollBackAndBrokenVersionsNeverServe) {
  // ---- version 1: every step, the engine, then a second deploy reuses it
  auto [code1, report1] = deploy("default --repo " + repo().root.string() + " --version 1");
  ASSERT_EQ(code1, 0) << report1.dump(2);
  std::vector<std::string> steps;
  for (const auto& step : report1["steps"]) steps.push_back(step["step"]);
  EXPECT_EQ(steps, (std::vector<std::string>{"build", "warm-up", "accuracy gate", "latency gate",
                                             "publish"}));
  EXPECT_LE(report1["gates"]["accuracy"]["wer"].get<double>(), 0.9);
  const std::string v1_engine = engine_of(report1);
  auto [again, report_again] = deploy("default --repo " + repo().root.string() + " --version 1");
  EXPECT_EQ(again, 0);
  EXPECT_NE(report_again["steps"][0]["detail"].get<std::string>().find("up to date"),
            std::string::npos);

  ServerConfig config;
  config.repo_path = repo().root.string();
  config.repo_poll_ms = 100;
  config.recognizer.engine_path.clear();
  RunningServer server(config);
  ASSERT_TRUE(serves(*server, {1}));
  const Speech& s = speech()[0];
  const std::string v1_text = reference_text(s, 640, v1_engine);

  // ---- a live stream on version 1, half sent
  Client live;
  ASSERT_EQ(live.connect(server->port()), "");
  live.send_text(R"({"config": {"sample_rate": 16000}})");
  std::size_t at = 0;
  for (; at + 640 <= s.pcm16.size() / 2; at += 640) {
    ASSERT_TRUE(live.send_binary(s.pcm16.data() + at, 640));
    ASSERT_TRUE(live.read().has_value());
  }

  // ---- version 2 published: new streams get it, the live one stays on 1
  auto [code2, report2] = deploy("default --repo " + repo().root.string());
  ASSERT_EQ(code2, 0) << report2.dump(2);
  EXPECT_EQ(report2["version"], 2);
  ASSERT_TRUE(serves(*server, {2}));
  const std::string v2_text = reference_text(s, 640, engine_of(report2));
  ASSERT_NE(v1_text, v2_text);
  EXPECT_EQ(stream_speech(server->port(), s, 640).text, v2_text);
  std::string live_text;
  for (; at < s.pcm16.size(); at += 640) {
    ASSERT_TRUE(
        live.send_binary(s.pcm16.data() + at, std::min<std::size_t>(640, s.pcm16.size() - at)));
    auto m = live.read();
    ASSERT_TRUE(m.has_value());
    if (m->contains("text") && !(*m)["text"].get<std::string>().empty())
      live_text += (live_text.empty() ? "" : " ") + (*m)["text"].get<std::string>();
  }
  live.send_text(R"({"eof": 1})");
  while (auto m = live.read()) {
    if (m->contains("text") && !(*m)["text"].get<std::string>().empty())
      live_text += (live_text.empty() ? "" : " ") + (*m)["text"].get<std::string>();
  }
  EXPECT_EQ(live_text, v1_text) << "the live stream left the version it started on";
  EXPECT_EQ(live.close_code(), 1000);
  // Version 1's last stream has ended: it is freed.
  const auto freed_by = Clock::now() + std::chrono::seconds(10);
  while (server->models().loaded_versions() > 1 && Clock::now() < freed_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(server->models().loaded_versions(), 1);

  // ---- rollback: back to 1 the same way
  auto [rolled, rollback_report] = deploy("default --repo " + repo().root.string() + " --rollback");
  ASSERT_EQ(rolled, 0) << rollback_report.dump(2);
  EXPECT_EQ(rollback_report["rolled_back"], 2);
  ASSERT_TRUE(serves(*server, {1}));
  EXPECT_EQ(stream_speech(server->port(), s, 640).text, v1_text);

  // ---- broken versions 3: bad ONNX, a failing gate, a model that fails at warm-up
  const fs::path v3 = repo().version(3);
  struct Broken {
    std::function<void()> make;
    std::string step;
  };
  const std::vector<Broken> broken = {
      {[&] { write_file(v3 / "model.onnx", "this is not an ONNX model"); }, "build"},
      {[&] {
         fs::copy_file(repo().null_model, v3 / "model.onnx");
         write_file(v3 / "build.json",
                    R"({"autotune": false, "profiles": ["features:1x4x80/8x32x80/64x32x80"],
                    "gates": {"accuracy": {"manifest": "../../eval/manifest.tsv", "max_wer": 0.5}}})");
       },
       "accuracy gate"},
      {[&] {
         fs::copy_file(source_dir() / "models/default/model.onnx", v3 / "model.onnx");
         // Two frames only: the recognizer's 32-frame chunks are refused at the first run.
         write_file(v3 / "build.json",
                    R"({"autotune": false, "profiles": ["features:1x2x80/1x2x80/1x2x80"]})");
       },
       "warm-up"},
  };
  for (const Broken& b : broken) {
    fs::remove_all(v3);
    fs::create_directories(v3);
    b.make();
    auto [code3, report3] = deploy("default --repo " + repo().root.string() + " --version 3");
    EXPECT_NE(code3, 0) << report3.dump(2);
    EXPECT_EQ(failed_step(report3), b.step) << report3.dump(2);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));  // a few repository reads
    EXPECT_EQ(server->models().serving_versions("default"), (std::vector<int>{1}));
    EXPECT_EQ(http_request(server->port(), http::verb::get, "/readyz").first, 200);
  }
  fs::remove_all(v3);
  EXPECT_EQ(stream_speech(server->port(), s, 640).text, v1_text);

  // ---- the admin endpoint re-reads at once
  auto [code2b, report2b] = deploy("default --repo " + repo().root.string() + " --version 2");
  ASSERT_EQ(code2b, 0);
  auto [status, body] = http_request(server->port(), http::verb::post, "/admin/reload");
  EXPECT_EQ(status, 200) << body;
  EXPECT_TRUE(serves(*server, {2}, 5));
  EXPECT_TRUE(server.slots_return_to(0));
}

TEST_F(ModelLifecycle, CanarySendsItsShareToTheNewestVersion) {
  // Versions 1 and 2 ready (the test above leaves 2 published; deploy both to be sure).
  ASSERT_EQ(deploy("default --repo " + repo().root.string() + " --version 1").first, 0);
  ASSERT_EQ(deploy("default --repo " + repo().root.string() + " --version 2").first, 0);
  ServerConfig config;
  config.repo_path = repo().root.string();
  config.canary_percent = 30;
  RunningServer server(config);
  ASSERT_TRUE(serves(*server, {2, 1}));
  const Speech& s = speech()[2];
  for (int i = 0; i < 20; ++i) (void)stream_speech(server->port(), s, 3200);
  const std::string metrics = server->metrics().serialize();
  EXPECT_NE(metrics.find(R"(voxrt_model_streams_total{model="default",version="2"} 6)"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find(R"(voxrt_model_streams_total{model="default",version="1"} 14)"),
            std::string::npos);
  // A model that does not exist is refused with a reason.
  Client client;
  ASSERT_EQ(client.connect(server->port(), "", "/models/nope"), "");
  auto refusal = client.read();
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ((*refusal)["kind"], "model_not_found");
}

// Why reload cycles cannot run on CUDA engines here ("" when they can): libvoxrt.so opens the
// CUDA plugin as `voxrt serve` does, and the backend names the missing device or driver.
std::string why_no_cuda_device() {
  auto backend = runtime::load_device_backend(DeviceKind::kCuda);
  if (!backend) return backend.status().message();
  auto fingerprint = (*backend)->fingerprint();
  if (!fingerprint) return fingerprint.status().message();
  return "";
}

long long rss_mib() {
  std::ifstream status_file("/proc/self/status");
  std::string line;
  while (std::getline(status_file, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) / 1024;
  ADD_FAILURE() << "no VmRSS line in /proc/self/status";
  return 0;
}

// Memory in use on the GPU, MiB, as nvidia-smi reports it for GPU 0 (the server's one compute
// worker runs on CUDA device 0; the GPU machine has one GPU). The whole device's, not this
// process's: in a container nvidia-smi may not list this process (another pid namespace).
long long gpu_used_mib() {
  const std::string command =
      "nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "could not start: " << command;
    return -1;
  }
  std::string out;
  char buffer[256];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  const int status = pclose(pipe);
  long long mib = -1;
  if (status == 0) {
    std::istringstream in(out);
    in >> mib;
  }
  if (mib < 0) ADD_FAILURE() << "expected a number of MiB from `" << command << "`, got: " << out;
  return mib;
}

// The lowest of `readings` readings 50 ms apart. A retired version leaves the router's count
// before its engine is freed (the last stream's session and the worker threads let go of it a
// moment later), so one reading right after the count drops may still hold a whole engine;
// memory that stays (a leak) is in every reading.
long long settled_mib(const std::function<long long()>& read, int readings) {
  long long lowest = read();
  for (int i = 1; i < readings; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    lowest = std::min(lowest, read());
  }
  return lowest;
}

std::string joined(const std::vector<long long>& values) {
  std::string text;
  for (long long v : values) text += std::to_string(v) + " ";
  return text;
}

// The same reload cycles on the engines of one target, `voxrt deploy --target T` and
// `voxrt serve --repo-target T`: "cpu" here and in CI, "cuda" on the GPU machine (skipped, with
// the reason, where there is no CUDA device).
class ReloadCycles : public ModelLifecycle, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "cuda") {
      const std::string why = why_no_cuda_device();
      if (!why.empty()) GTEST_SKIP() << "no CUDA engines to reload: " << why;
    }
    ModelLifecycle::SetUp();
  }
};

TEST_P(ReloadCycles, UnderLoadReturnMemoryAndDropNoStream) {
  const std::string target = GetParam();
  const bool cuda = target == "cuda";
  for (int version : {1, 2}) {
    auto [code, report] = deploy("default --repo " + repo().root.string() + " --version " +
                                 std::to_string(version) + " --target " + target);
    ASSERT_EQ(code, 0) << "deploy of version " << version << " for " << target << ": "
                       << report.dump(2);
  }
  ModelRepository repository(repo().root);
  auto set_rolled_back = [&](bool rolled_back) {
    auto status = repository.status("default", 2);
    ASSERT_TRUE(status.has_value());
    status->rolled_back = rolled_back;
    ASSERT_TRUE(repository.write_status("default", 2, *status).is_ok());
  };
  ServerConfig config;
  config.repo_path = repo().root.string();
  config.repo_target = target;
  config.repo_poll_ms = 100;
  RunningServer server(config);
  ASSERT_TRUE(serves(*server, {2}));
  const long long gpu_before_mib = cuda ? gpu_used_mib() : 0;
  ASSERT_GE(gpu_before_mib, 0) << "the GPU's memory cannot be read: no cycles run";
  // Load all through the cycles: streams that must all end normally, whichever version they get.
  std::atomic<bool> stop{false};
  std::atomic<int> streams{0}, bad{0};
  std::vector<std::thread> load;
  for (int t = 0; t < 2; ++t) {
    load.emplace_back([&] {
      while (!stop) {
        const StreamOutcome got = stream_speech(server->port(), speech()[2], 3200);
        ++streams;
        if (got.close_code != 1000 || got.replies != got.frames) ++bad;
      }
    });
  }
  const int cycles =
      std::getenv("VOXRT_RELOAD_CYCLES") ? std::atoi(std::getenv("VOXRT_RELOAD_CYCLES")) : 10;
  std::vector<long long> rss_after_cycle, gpu_after_cycle;
  for (int cycle = 0; cycle < cycles; ++cycle) {
    set_rolled_back(true);
    ASSERT_TRUE(serves(*server, {1})) << "cycle " << cycle;
    set_rolled_back(false);
    ASSERT_TRUE(serves(*server, {2})) << "cycle " << cycle;
    const auto settled = Clock::now() + std::chrono::seconds(10);
    while (server->models().loaded_versions() > 1 && Clock::now() < settled)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rss_after_cycle.push_back(settled_mib(rss_mib, 10));
    if (cuda) gpu_after_cycle.push_back(settled_mib(gpu_used_mib, 5));
  }
  stop = true;
  for (auto& t : load) t.join();
  EXPECT_EQ(bad.load(), 0) << "of " << streams.load() << " streams";
  EXPECT_GT(streams.load(), cycles);
  std::cerr << "[lifecycle] " << target << " engines, " << cycles << " cycles, " << streams.load()
            << " streams\n";
  std::cerr << "[lifecycle] RSS MiB after each reload cycle: " << joined(rss_after_cycle) << "\n";
  if (cuda) {
    std::cerr << "[lifecycle] GPU memory used MiB before the cycles: " << gpu_before_mib
              << ", after each: " << joined(gpu_after_cycle) << "\n";
  }
  // Each cycle loads and frees an engine (32 MB of weights): memory must not grow with cycles.
  ASSERT_GE(rss_after_cycle.size(), 2u);
  EXPECT_LT(rss_after_cycle.back() - rss_after_cycle.front(), 48) << joined(rss_after_cycle);
  if (cuda) {
    // The engine's weights (31 MiB), its arena and its captured CUDA graphs are freed with the
    // version: one engine's worth kept per cycle passes 64 MiB in three cycles, 1 MiB per cycle
    // in the full run's 100.
    EXPECT_LT(gpu_after_cycle.back() - gpu_after_cycle.front(), 64) << joined(gpu_after_cycle);
  }
  EXPECT_EQ(server->models().loaded_versions(), 1);
}

INSTANTIATE_TEST_SUITE_P(Targets, ReloadCycles, ::testing::Values("cpu", "cuda"),
                         [](const ::testing::TestParamInfo<std::string>& target) {
                           return target.param;
                         });

// A stream sent at full speed; returns the `kind` of the error message that ended it ("" when it
// ended normally) and the text of its finals.
std::pair<std::string, std::string> stream_until_error(int port, const Speech& speech,
                                                       const std::string& path) {
  Client client;
  if (!client.connect(port, "", path).empty()) return {"connect", ""};
  client.send_text(json{{"config", {{"sample_rate", speech.sample_rate_hz}}}}.dump());
  std::string text;
  auto take = [&](const json& m) -> std::string {
    if (m.contains("error")) return m.value("kind", std::string("?"));
    if (m.contains("text") && !m["text"].get<std::string>().empty())
      text += (text.empty() ? "" : " ") + m["text"].get<std::string>();
    return "";
  };
  for (std::size_t at = 0; at < speech.pcm16.size(); at += 3200) {
    if (!client.send_binary(speech.pcm16.data() + at,
                            std::min<std::size_t>(3200, speech.pcm16.size() - at)))
      return {"send failed", text};
    auto reply = client.read();
    if (!reply) return {"closed", text};
    if (auto kind = take(*reply); !kind.empty()) return {kind, text};
  }
  client.send_text(R"({"eof": 1})");
  while (auto reply = client.read()) {
    if (auto kind = take(*reply); !kind.empty()) return {kind, text};
  }
  return {client.close_code() == 1000 ? "" : "close " + std::to_string(client.close_code()), text};
}

TEST_F(ModelLifecycle, VersionThatFailsLiveStreamsIsRetiredAndTheOldOneServesOn) {
  // A repository of its own: model "faulty", version 1 the null model, version 2 the null model
  // that fails on speech (tests/server/make_faulty_model.py). Version 2 passes the build, the
  // warm-up on silence and the latency gate: only live traffic can show that it is broken.
  const fs::path root = lifecycle_dir() / "live_errors_repo";
  fs::remove_all(root);
  const std::string build_json = R"({"profiles": ["features:1x4x80/8x32x80/64x32x80"],
    "autotune": false, "gates": {"latency": {"max_p99_ms": 2000, "batch": 8}}})";
  fs::create_directories(root / "faulty" / "1");
  fs::copy_file(repo().null_model, root / "faulty" / "1" / "model.onnx");
  write_file(root / "faulty" / "1" / "build.json", build_json);
  auto [code1, report1] = deploy("faulty --repo " + root.string() + " --version 1");
  ASSERT_EQ(code1, 0) << report1.dump(2);

  ServerConfig config;
  config.repo_path = root.string();
  config.repo_poll_ms = 100;
  config.recognizer.engine_path.clear();
  RunningServer server(config);
  ASSERT_TRUE(serves(*server, {1}, 30, "faulty"));
  const Speech& s = speech()[0];
  const auto [v1_error, v1_text] = stream_until_error(server->port(), s, "/models/faulty");
  ASSERT_EQ(v1_error, "");

  const fs::path v2 = root / "faulty" / "2";
  fs::create_directories(v2);
  ASSERT_EQ(
      run_shell(python() + " " + (source_dir() / "tests/server/make_faulty_model.py").string() +
                " " + repo().null_model.string() + " " + (v2 / "model.onnx").string()),
      0);
  write_file(v2 / "build.json", build_json);
  auto [code2, report2] = deploy("faulty --repo " + root.string() + " --version 2");
  ASSERT_EQ(code2, 0) << "the faulty version should pass every deploy step: " << report2.dump(2);
  ASSERT_TRUE(serves(*server, {2}, 30, "faulty"));

  // Streams on version 2 end with engine errors until the router retires it (at least 5
  // failed streams and more than ServerConfig::max_engine_error_rate of them).
  int engine_errors = 0, streams = 0;
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (server->models().serving_versions("faulty") != std::vector<int>{1} &&
         Clock::now() < deadline) {
    const auto [error, text] = stream_until_error(server->port(), s, "/models/faulty");
    ++streams;
    if (error == "engine") ++engine_errors;
  }
  EXPECT_EQ(server->models().serving_versions("faulty"), (std::vector<int>{1}))
      << engine_errors << " engine errors in " << streams << " streams";
  EXPECT_GE(engine_errors, 5);
  const std::string metrics = server->metrics().serialize();
  EXPECT_NE(
      metrics.find(
          R"(voxrt_model_version_failures_total{kind="live_errors",model="faulty",version="2"} 1)"),
      std::string::npos)
      << metrics;

  // Version 1 answers again, as before, and the server stayed ready; version 2 is not reloaded
  // at later repository reads.
  const auto [after_error, after_text] = stream_until_error(server->port(), s, "/models/faulty");
  EXPECT_EQ(after_error, "");
  EXPECT_EQ(after_text, v1_text);
  EXPECT_EQ(http_request(server->port(), http::verb::get, "/readyz").first, 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(server->models().serving_versions("faulty"), (std::vector<int>{1}));
  EXPECT_TRUE(server.slots_return_to(0));
}

}  // namespace
}  // namespace voxrt::server::server_test
