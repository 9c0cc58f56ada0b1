#include "server/model_repository.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/device_backend.h"
#include "runtime/byte_stream.h"
#include "runtime/device_plugin.h"
#include "runtime/engine_format.h"

namespace voxrt::server {

namespace fs = std::filesystem;
using json = nlohmann::json;
using runtime::fnv1a64;
using runtime::kBuilderVersion;

namespace {

Expected<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path.string(), ": cannot read it");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::optional<int> version_number(const std::string& name) {
  int value = 0;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), value);
  if (ec != std::errc() || end != name.data() + name.size() || value <= 0) return std::nullopt;
  return value;
}

std::string hex(std::uint64_t value) {
  char buffer[17];
  std::snprintf(buffer, sizeof(buffer), "%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Hash of a file, or of every file under a folder (names and bytes, in name order).
Expected<std::uint64_t> hash_source(const fs::path& source) {
  std::uint64_t hash = fnv1a64("voxrt-model", 11);
  std::vector<fs::path> files;
  if (fs::is_directory(source)) {
    for (const auto& entry : fs::recursive_directory_iterator(source))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(source);
  }
  for (const fs::path& file : files) {
    VOXRT_ASSIGN_OR_RETURN(std::string bytes, read_text(file));
    const std::string name = fs::relative(file, source.parent_path()).string();
    hash = fnv1a64(name.data(), name.size(), hash);
    hash = fnv1a64(bytes.data(), bytes.size(), hash);
  }
  return hash;
}

}  // namespace

Expected<std::vector<std::string>> ModelRepository::models() const {
  std::error_code ec;
  if (!fs::is_directory(root_, ec))
    return not_found("model repository ", root_.string(), ": not a folder");
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    if (!entry.is_directory()) continue;
    auto numbers = versions(entry.path().filename().string());
    if (numbers && !numbers->empty()) names.push_back(entry.path().filename().string());
  }
  if (ec) return io_error("model repository ", root_.string(), ": ", ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

Expected<std::vector<int>> ModelRepository::versions(const std::string& model) const {
  const fs::path folder = root_ / model;
  std::error_code ec;
  if (!fs::is_directory(folder, ec))
    return not_found("model repository ", root_.string(), ": no model '", model, "'");
  std::vector<int> numbers;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (!entry.is_directory()) continue;
    if (auto number = version_number(entry.path().filename().string())) numbers.push_back(*number);
  }
  std::sort(numbers.begin(), numbers.end());
  return numbers;
}

fs::path ModelRepository::version_dir(const std::string& model, int version) const {
  return root_ / model / std::to_string(version);
}

Expected<fs::path> ModelRepository::source(const std::string& model, int version) const {
  const fs::path dir = version_dir(model, version);
  if (fs::is_regular_file(dir / "model.onnx")) return dir / "model.onnx";
  if (fs::is_directory(dir / "model")) return dir / "model";
  return not_found(dir.string(), ": expected model.onnx or a model/ folder, found neither");
}

Expected<BuildSettings> ModelRepository::build_settings(const std::string& model,
                                                        int version) const {
  BuildSettings settings;
  const fs::path path = version_dir(model, version) / "build.json";
  if (!fs::exists(path)) return settings;
  VOXRT_ASSIGN_OR_RETURN(settings.text, read_text(path));
  const json doc = json::parse(settings.text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return invalid_argument(path.string(), ": expected a JSON object");
  try {
    if (doc.contains("profiles"))
      settings.profiles = doc["profiles"].get<std::vector<std::string>>();
    settings.precision = doc.value("precision", settings.precision);
    settings.autotune = doc.value("autotune", settings.autotune);
    if (doc.contains("gates")) {
      const json& gates = doc["gates"];
      if (gates.contains("accuracy")) {
        settings.accuracy_manifest = gates["accuracy"].value("manifest", std::string());
        settings.max_wer = gates["accuracy"].value("max_wer", settings.max_wer);
      }
      if (gates.contains("latency")) {
        settings.max_p99_ms = gates["latency"].value("max_p99_ms", settings.max_p99_ms);
        settings.latency_batch = gates["latency"].value("batch", settings.latency_batch);
      }
    }
  } catch (const json::exception& error) {
    return invalid_argument(path.string(), ": ", error.what());
  }
  if (settings.max_wer < 0 || settings.max_wer > 10)
    return invalid_argument(path.string(), ": gates.accuracy.max_wer must be 0..10, found ",
                            settings.max_wer);
  if (settings.latency_batch < 1)
    return invalid_argument(path.string(), ": gates.latency.batch must be >= 1");
  return settings;
}

Expected<VersionStatus> ModelRepository::status(const std::string& model, int version) const {
  VersionStatus status;
  const fs::path path = version_dir(model, version) / "status.json";
  if (!fs::exists(path)) return status;
  VOXRT_ASSIGN_OR_RETURN(std::string text, read_text(path));
  const json doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return corrupt(path.string(), ": expected a JSON object");
  status.rolled_back = doc.value("rolled_back", false);
  if (doc.contains("targets") && doc["targets"].is_object()) {
    for (const auto& [target, entry] : doc["targets"].items()) {
      TargetStatus t;
      t.state = entry.value("state", std::string());
      t.engine = entry.value("engine", std::string());
      t.detail = entry.value("detail", std::string());
      t.updated_at = entry.value("updated_at", std::string());
      t.gates_json = entry.contains("gates") ? entry["gates"].dump() : "{}";
      status.targets[target] = std::move(t);
    }
  }
  return status;
}

Status ModelRepository::write_status(const std::string& model, int version,
                                     const VersionStatus& status) const {
  json doc = {{"rolled_back", status.rolled_back}, {"targets", json::object()}};
  for (const auto& [target, t] : status.targets) {
    json gates = json::parse(t.gates_json.empty() ? "{}" : t.gates_json, nullptr, false);
    doc["targets"][target] = {{"state", t.state},
                              {"engine", t.engine},
                              {"detail", t.detail},
                              {"updated_at", t.updated_at},
                              {"gates", gates.is_discarded() ? json::object() : gates}};
  }
  const fs::path path = version_dir(model, version) / "status.json";
  const fs::path temporary = path.string() + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out << doc.dump(2) << "\n";
    if (!out) return io_error(temporary.string(), ": cannot write it");
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) return io_error(path.string(), ": ", ec.message());
  return Status::ok();
}

fs::path ModelRepository::timing_cache(const std::string& model, const std::string& target) const {
  return root_ / model / "timing_cache" / (target + ".cache");
}

Expected<std::vector<ServableVersion>> ModelRepository::servable(const std::string& model,
                                                                 const std::string& target) const {
  VOXRT_ASSIGN_OR_RETURN(std::vector<int> numbers, versions(model));
  std::vector<ServableVersion> out;
  for (auto it = numbers.rbegin(); it != numbers.rend(); ++it) {
    auto s = status(model, *it);
    if (!s || s->rolled_back) continue;
    auto entry = s->targets.find(target);
    if (entry == s->targets.end() || entry->second.state != "ready") continue;
    const fs::path engine = version_dir(model, *it) / entry->second.engine;
    if (!fs::is_regular_file(engine)) continue;
    out.push_back(ServableVersion{*it, engine});
  }
  return out;
}

Expected<std::string> machine_target(DeviceKind device) {
  std::string fingerprint;
  if (device == DeviceKind::kCpu) {
    fingerprint = backends::cpu::cpu_fingerprint();
  } else {
    VOXRT_ASSIGN_OR_RETURN(backends::DeviceBackend * backend, runtime::load_device_backend(device));
    VOXRT_ASSIGN_OR_RETURN(fingerprint, backend->fingerprint());
  }
  const std::string identity = fingerprint + "|" + kBuilderVersion;
  return std::string(device == DeviceKind::kCpu ? "cpu-" : "cuda-") +
         hex(fnv1a64(identity.data(), identity.size())).substr(0, 12);
}

Expected<std::string> engine_key(const fs::path& source, const BuildSettings& settings,
                                 const std::string& target) {
  VOXRT_ASSIGN_OR_RETURN(std::uint64_t hash, hash_source(source));
  hash = fnv1a64(settings.text.data(), settings.text.size(), hash);
  hash = fnv1a64(target.data(), target.size(), hash);
  return target + "-" + hex(hash).substr(0, 16);
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

}  // namespace voxrt::server
