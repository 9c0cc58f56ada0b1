// voxrt deploy: one version of a model in a model repository (docs/model_repository.md) from
// source to ready: validate and build the engine for this machine (reusing one already built
// for the same model, settings, machine and builder), warm it up in a child process, run the
// accuracy and latency gates, then publish (status.json). `voxrt serve --repo` picks a newly
// published version up without a restart. --rollback retires the newest ready version.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "child_process.h"
#include "commands.h"
#include "progress_bar.h"
#include "server/engine_timing.h"
#include "server/model_repository.h"
#include "shape_args.h"
#include "stream/manifest_decoding.h"
#include "voxrt/builder.h"

namespace voxrt::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct DeployArgs {
  std::string model;
  std::string repo;
  int version = 0;  // 0: the newest
  std::string target = "cpu";
  int threads = 1;
  bool rollback = false;
  bool json = false;
};

// What deploy did, step by step; printed as it goes and, with --json, as one object at the end.
class DeployLog {
 public:
  explicit DeployLog(bool quiet) : quiet_(quiet) {}
  void step(const std::string& name, bool ok, double seconds, const std::string& detail) {
    steps_.push_back({{"step", name}, {"ok", ok}, {"seconds", seconds}, {"detail", detail}});
    if (!quiet_) {
      std::cerr << "[deploy] " << name << ": " << (ok ? "ok" : "FAILED") << " (" << seconds
                << " s) " << detail << "\n";
    }
  }
  json& summary() { return summary_; }
  json to_json() {
    summary_["steps"] = steps_;
    return summary_;
  }

 private:
  bool quiet_;
  json steps_ = json::array();
  json summary_ = json::object();
};

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Expected<BuilderConfig> builder_config(const server::BuildSettings& settings, DeviceKind device,
                                       int threads, const fs::path& timing_cache) {
  BuilderConfig config;
  config.device = device;
  VOXRT_ASSIGN_OR_RETURN(config.precision, precision_from_name(settings.precision));
  VOXRT_ASSIGN_OR_RETURN(config.profiles, parse_profiles(settings.profiles));
  config.threads = threads;
  config.autotune = settings.autotune;
  config.timing_cache_path = timing_cache.string();
  return config;
}

// One second of silence as a WAV file: what the warm-up child transcribes.
Status write_silence_wav(const fs::path& path) {
  std::ofstream out(path, std::ios::binary);
  const std::uint32_t samples = 16000, bytes = samples * 2;
  auto u32 = [&](std::uint32_t v) { out.write(reinterpret_cast<const char*>(&v), 4); };
  auto u16 = [&](std::uint16_t v) { out.write(reinterpret_cast<const char*>(&v), 2); };
  out << "RIFF";
  u32(36 + bytes);
  out << "WAVEfmt ";
  u32(16);
  u16(1);
  u16(1);
  u32(16000);
  u32(32000);
  u16(2);
  u16(16);
  out << "data";
  u32(bytes);
  const std::string zeros(bytes, '\0');
  out.write(zeros.data(), bytes);
  return out ? Status::ok() : io_error(path.string(), ": cannot write it");
}

int rollback(const DeployArgs& args, const server::ModelRepository& repo, const std::string& target,
             DeployLog& log) {
  const auto start = Clock::now();
  auto servable = repo.servable(args.model, target);
  if (!servable || servable->empty()) {
    log.step("rollback", false, since(start),
             servable ? "no ready version of " + args.model + " on " + target
                      : servable.status().message());
    return 1;
  }
  const int retired = (*servable)[0].version;
  auto status = repo.status(args.model, retired);
  if (!status) {
    log.step("rollback", false, since(start), status.status().message());
    return 1;
  }
  status->rolled_back = true;
  if (Status written = repo.write_status(args.model, retired, *status); !written) {
    log.step("rollback", false, since(start), written.message());
    return 1;
  }
  const std::string now_serving =
      servable->size() > 1 ? std::to_string((*servable)[1].version) : std::string("nothing");
  log.summary()["rolled_back"] = retired;
  log.summary()["serving"] = servable->size() > 1 ? json((*servable)[1].version) : json(nullptr);
  log.step(
      "rollback", true, since(start),
      "version " + std::to_string(retired) + " retired; " + target + " now serves " + now_serving);
  return 0;
}

int run_deploy(const DeployArgs& args) {
  DeployLog log(args.json);
  auto finish = [&](int code) {
    log.summary()["ok"] = code == 0;
    if (args.json) std::cout << log.to_json().dump(2) << "\n";
    return code;
  };
  const server::ModelRepository repo(args.repo);
  if (args.target != "cpu" && args.target != "cuda") {
    std::cerr << "error: --target '" << args.target << "': expected cpu or cuda\n";
    return 2;
  }
  const DeviceKind device = args.target == "cuda" ? DeviceKind::kCuda : DeviceKind::kCpu;
  auto start = Clock::now();
  auto target = server::machine_target(device);
  if (!target) {
    log.step("target", false, since(start), target.status().message());
    return finish(1);
  }
  log.summary()["model"] = args.model;
  log.summary()["target"] = *target;
  if (args.rollback) return finish(rollback(args, repo, *target, log));

  // ---- which version, from what
  auto versions = repo.versions(args.model);
  if (!versions || versions->empty()) {
    log.step("validate", false, since(start),
             versions ? "no versions of " + args.model : versions.status().message());
    return finish(1);
  }
  const int version = args.version > 0 ? args.version : versions->back();
  log.summary()["version"] = version;
  const fs::path dir = repo.version_dir(args.model, version);
  auto source = repo.source(args.model, version);
  auto settings = source ? repo.build_settings(args.model, version)
                         : Expected<server::BuildSettings>(source.status());
  auto key = settings ? server::engine_key(*source, *settings, *target)
                      : Expected<std::string>(settings.status());
  if (!key) {
    log.step("validate", false, since(start), key.status().message());
    return finish(1);
  }
  if (source->extension() != ".onnx") {
    log.step("validate", false, since(start),
             source->string() + ": model folders are not deployable yet; give model.onnx");
    return finish(1);
  }
  auto stored = repo.status(args.model, version);
  server::VersionStatus version_status = stored ? *stored : server::VersionStatus{};
  server::VersionStatus* status = &version_status;
  server::TargetStatus& outcome = status->targets[*target];
  outcome.engine = "engines/" + *key + ".engine";
  outcome.updated_at = server::utc_now();
  const fs::path engine = dir / outcome.engine;
  log.summary()["engine"] = engine.string();
  auto fail = [&](const std::string& step, const std::string& why) {
    log.step(step, false, since(start), why);
    outcome.state = "failed";
    outcome.detail = step + ": " + why;
    (void)repo.write_status(args.model, version, *status);
    return finish(1);
  };

  // ---- validate + build (an engine with this key is this model, these settings, this machine)
  start = Clock::now();
  if (fs::is_regular_file(engine)) {
    log.step("build", true, since(start), "engine up to date: " + outcome.engine);
  } else {
    fs::create_directories(engine.parent_path());
    fs::create_directories(repo.timing_cache(args.model, *target).parent_path());
    auto config =
        builder_config(*settings, device, args.threads, repo.timing_cache(args.model, *target));
    if (!config) return fail("validate", config.status().message());
    ProgressBar bar;
    if (!args.json)
      config->on_progress = [&](const BuildProgress& p) {
        bar.update(p.stage, p.done, p.total, p.detail);
      };
    BuildReport report;
    auto built = build_engine_from_onnx_file(source->string(), *config, &report);
    bar.finish();
    if (!built) {
      std::string why = built.status().message();
      for (const auto& node : report.unsupported_nodes) why += "\n  unsupported: " + node;
      return fail("build", why);
    }
    const fs::path temporary = engine.string() + ".tmp";
    std::ofstream(temporary, std::ios::binary)
        .write(built->data(), static_cast<std::streamsize>(built->size()));
    fs::rename(temporary, engine);
    log.step("build", true, since(start),
             outcome.engine + " (" + std::to_string(built->size()) + " bytes, " +
                 std::to_string(report.tactics_timed) + " tactics timed)");
  }

  // ---- warm-up in a child: a model that crashes or hangs fails here, not in a server
  start = Clock::now();
  const fs::path scratch = fs::temp_directory_path() / ("voxrt-deploy-" + std::to_string(getpid()));
  fs::create_directories(scratch);
  if (Status wrote = write_silence_wav(scratch / "silence.wav"); !wrote)
    return fail("warm-up", wrote.message());
  const ChildOutcome warm =
      run_child({this_executable(), "transcribe", "--engine", engine.string(), "--vad", "off",
                 (scratch / "silence.wav").string()},
                std::chrono::seconds(300), (scratch / "warm_up.log").string());
  fs::remove_all(scratch);
  if (!warm.ok()) return fail("warm-up", "voxrt transcribe on 1 s of silence " + warm.describe());
  log.step("warm-up", true, since(start), "the engine loads and decodes in a separate process");

  // ---- gates
  json gates = json::object();
  if (!settings->accuracy_manifest.empty()) {
    start = Clock::now();
    const fs::path manifest = dir / settings->accuracy_manifest;
    auto entries = stream::read_manifest(manifest.string());
    if (!entries) return fail("accuracy gate", entries.status().message());
    stream::RecognizerConfig config;
    config.engine_path = engine.string();
    config.threads = args.threads;
    config.max_streams = 16;
    auto recognizer = stream::Recognizer::create(config);
    if (!recognizer) return fail("accuracy gate", recognizer.status().message());
    auto score = stream::decode_manifest(**recognizer, *entries, 8);
    if (!score) return fail("accuracy gate", score.status().message());
    gates["accuracy"] = {{"manifest", settings->accuracy_manifest},
                         {"files", score->files},
                         {"words", score->reference_words},
                         {"wer", score->wer()},
                         {"max_wer", settings->max_wer}};
    std::ostringstream detail;
    detail << "WER " << score->wer() * 100 << " % on " << score->files << " files ("
           << score->reference_words << " words), limit " << settings->max_wer * 100 << " %";
    if (score->wer() > settings->max_wer) return fail("accuracy gate", detail.str());
    log.step("accuracy gate", true, since(start), detail.str());
  }
  if (settings->max_p99_ms > 0) {
    start = Clock::now();
    auto timing =
        server::time_engine_chunks(engine.string(), settings->latency_batch, args.threads, 100);
    if (!timing) return fail("latency gate", timing.status().message());
    const double p99_ms = timing->percentile_s(99) * 1000;
    gates["latency"] = {{"batch", timing->batch},
                        {"p50_ms", timing->median_s() * 1000},
                        {"p99_ms", p99_ms},
                        {"max_p99_ms", settings->max_p99_ms}};
    std::ostringstream detail;
    detail << "p99 " << p99_ms << " ms per chunk at batch " << timing->batch << " (p50 "
           << timing->median_s() * 1000 << " ms), limit " << settings->max_p99_ms << " ms";
    if (timing->batch != settings->latency_batch)
      return fail("latency gate", detail.str() + ": the engine does not take batch " +
                                      std::to_string(settings->latency_batch));
    if (p99_ms > settings->max_p99_ms) return fail("latency gate", detail.str());
    log.step("latency gate", true, since(start), detail.str());
  }

  // ---- publish
  start = Clock::now();
  outcome.state = "ready";
  outcome.detail = "published";
  outcome.gates_json = gates.dump();
  status->rolled_back = false;
  if (Status written = repo.write_status(args.model, version, *status); !written)
    return fail("publish", written.message());
  log.summary()["gates"] = gates;
  log.step("publish", true, since(start),
           args.model + " version " + std::to_string(version) + " is ready on " + *target);
  return finish(0);
}

}  // namespace

void add_deploy_command(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<DeployArgs>();
  CLI::App* cmd = app.add_subcommand(
      "deploy", "Validate, build, gate and publish a model version in a model repository");
  cmd->footer(
      "The repository holds repo/NAME/VERSION/{model.onnx, build.json} "
      "(docs/model_repository.md).\n"
      "Deploy builds the engine for this machine (an engine already built for the same model,\n"
      "settings, machine and builder is reused), loads and runs it once in a separate process,\n"
      "decodes build.json's accuracy manifest (gates.accuracy.max_wer) and times one engine call\n"
      "(gates.latency.max_p99_ms at gates.latency.batch), then marks the version ready in its\n"
      "status.json. A server started with `voxrt serve --repo` serves it within seconds; live\n"
      "streams finish on the version they started on. Every step says what it did or why it\n"
      "stopped; the exit code is 0 only when the version was published.\n\n"
      "Examples:\n"
      "  voxrt deploy default --repo models/repo                   newest version, this CPU\n"
      "  voxrt deploy default --repo models/repo --version 2 --json\n"
      "  voxrt deploy default --repo /srv/repo --target cuda       on the GPU machine\n"
      "  voxrt deploy default --repo models/repo --rollback        retire the newest ready one");
  cmd->add_option("model", args->model, "Model name (a folder of the repository)")->required();
  cmd->add_option("--repo", args->repo, "Model repository folder")->required();
  cmd->add_option("--version", args->version, "Version to deploy (default: the newest)");
  cmd->add_option("--target", args->target, "cpu | cuda")->capture_default_str();
  cmd->add_option("--threads", args->threads, "Threads for tactic timing and the gates")
      ->capture_default_str();
  cmd->add_flag("--rollback", args->rollback,
                "Retire the newest ready version instead (servers return to the previous one)");
  cmd->add_flag("--json", args->json, "Print the steps as one JSON object on stdout");
  cmd->callback([args, &exit_code] { exit_code = run_deploy(*args); });
}

}  // namespace voxrt::cli
