// The model repository (docs/model_repository.md): one folder per model, one numbered folder
// per version, each holding the source model, its build settings, the engines built from it and
// its status. `voxrt deploy` writes it; `voxrt serve --repo` reads it. Engines are keyed by the
// model, its settings, the target machine and the builder, so an engine that does not match the
// machine is rebuilt, never loaded.
//
//   repo/NAME/VERSION/model.onnx          the source model (or model/: a model folder)
//   repo/NAME/VERSION/build.json          build settings and gates (optional; defaults below)
//   repo/NAME/VERSION/engines/KEY.engine  what deploy built, one per target
//   repo/NAME/VERSION/status.json         {"rolled_back": bool, "targets": {TARGET: {...}}}
//   repo/NAME/timing_cache/TARGET.cache   the builder's timing cache, shared by versions
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "voxrt/builder.h"
#include "voxrt/status.h"

namespace voxrt::server {

// build.json. Every field is optional.
struct BuildSettings {
  // "features:1x4x80/8x32x80/64x32x80" (voxrt build --profile syntax); none: the builder's default.
  std::vector<std::string> profiles;
  std::string precision = "fp32";
  bool autotune = true;
  // Accuracy gate: the manifest (path relative to the version folder) must decode with a WER of
  // at most max_wer (a fraction: 0.3 = 30 %). No manifest: no accuracy gate.
  std::string accuracy_manifest;
  double max_wer = 1.0;
  // Latency gate: the p99 time of one engine call at `latency_batch` streams, each with one
  // chunk, must be at most max_p99_ms. 0: no latency gate.
  double max_p99_ms = 0;
  int latency_batch = 1;
  std::string text;  // the file as read (part of the engine key)
};

// One target's outcome in status.json.
struct TargetStatus {
  std::string state;       // "ready" | "failed"
  std::string engine;      // engines/KEY.engine, relative to the version folder
  std::string detail;      // why it failed, or what the gates measured
  std::string updated_at;  // UTC, ISO 8601
  std::string gates_json;  // the gates' measurements as a JSON object
};

struct VersionStatus {
  bool rolled_back = false;
  std::map<std::string, TargetStatus> targets;
};

// A version that can serve on a target: its number and engine file.
struct ServableVersion {
  int version = 0;
  std::filesystem::path engine;
};

class ModelRepository {
 public:
  explicit ModelRepository(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }

  // Model names (folders holding at least one numbered version), sorted.
  Expected<std::vector<std::string>> models() const;
  // Version numbers of `model`, ascending.
  Expected<std::vector<int>> versions(const std::string& model) const;
  std::filesystem::path version_dir(const std::string& model, int version) const;
  // model.onnx, or the model folder (model/), of a version; an error names what is missing.
  Expected<std::filesystem::path> source(const std::string& model, int version) const;
  Expected<BuildSettings> build_settings(const std::string& model, int version) const;
  Expected<VersionStatus> status(const std::string& model, int version) const;
  // Written atomically (a temporary file renamed over it).
  Status write_status(const std::string& model, int version, const VersionStatus& status) const;
  std::filesystem::path timing_cache(const std::string& model, const std::string& target) const;

  // Versions of `model` ready on `target` and not rolled back, newest first, whose engine file
  // exists.
  Expected<std::vector<ServableVersion>> servable(const std::string& model,
                                                  const std::string& target) const;

 private:
  std::filesystem::path root_;
};

// The target this machine is for `device`: "cpu-" or "cuda-" and a hash of the backend's
// fingerprint and the builder version (an engine built elsewhere or by another builder has
// another key and is rebuilt).
Expected<std::string> machine_target(DeviceKind device);
// The engine's file name for a version on a target: a hash of the source model's bytes, the
// build settings and the target.
Expected<std::string> engine_key(const std::filesystem::path& source, const BuildSettings& settings,
                                 const std::string& target);
// Current UTC time as 2026-12-06T17:30:00Z.
std::string utc_now();

}  // namespace voxrt::server
