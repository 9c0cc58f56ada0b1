#include "stream/bundle_manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace voxrt::stream {
namespace fs = std::filesystem;

bool is_bundle_path(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return fs::exists(fs::path(path) / BundleManifest::kFileName, ec);
  return fs::path(path).filename() == BundleManifest::kFileName;
}

std::string bundle_folder(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) return path;
  return fs::path(path).parent_path().string();
}

namespace {

Expected<std::map<std::string, std::string>> string_map(const nlohmann::json& j,
                                                        const std::string& key,
                                                        const std::string& where, bool required) {
  std::map<std::string, std::string> out;
  if (!j.contains(key)) {
    if (required) return invalid_argument(where, ": key '", key, "' is missing");
    return out;
  }
  if (!j[key].is_object()) return invalid_argument(where, ": '", key, "' must be an object");
  for (const auto& [k, v] : j[key].items()) {
    if (!v.is_string())
      return invalid_argument(where, ": '", key, ".", k, "' must be a string, found ", v.dump());
    out[k] = v.get<std::string>();
  }
  return out;
}

}  // namespace

Expected<BundleManifest> BundleManifest::read(const std::string& path) {
  const fs::path file = fs::path(bundle_folder(path)) / kFileName;
  std::ifstream in(file);
  if (!in) return not_found(file.string(), ": cannot read the bundle manifest");
  std::stringstream text;
  text << in.rdbuf();
  const std::string where = file.string();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument(where, ": not a JSON object");
  if (!j.contains("format") || j["format"] != "voxrt.bundle")
    return invalid_argument(where, ": key 'format' must be \"voxrt.bundle\"");
  if (!j.contains("version") || !j["version"].is_number_integer() ||
      j["version"].get<int>() > kVersion) {
    return invalid_argument(where, ": key 'version' must be an integer <= ", kVersion,
                            " (written by a newer voxrt?)");
  }
  if (!j.contains("family") || !j["family"].is_string())
    return invalid_argument(where, ": key 'family' is missing");
  BundleManifest m;
  m.family = j["family"].get<std::string>();
  VOXRT_ASSIGN_OR_RETURN(m.engines, string_map(j, "engines", where, true));
  VOXRT_ASSIGN_OR_RETURN(m.metadata, string_map(j, "metadata", where, true));
  VOXRT_ASSIGN_OR_RETURN(m.source, string_map(j, "source", where, false));
  return m;
}

Status BundleManifest::write(const std::string& folder) const {
  nlohmann::json j;
  j["format"] = "voxrt.bundle";
  j["version"] = kVersion;
  j["family"] = family;
  j["engines"] = engines;
  j["metadata"] = metadata;
  j["source"] = source;
  const fs::path file = fs::path(folder) / kFileName;
  std::ofstream out(file, std::ios::trunc);
  out << j.dump(2) << "\n";
  if (!out) return io_error("cannot write ", file.string());
  return Status::ok();
}

Expected<std::string> BundleManifest::engine_path(const std::string& folder,
                                                  const std::string& role) const {
  auto it = engines.find(role);
  if (it == engines.end()) {
    return invalid_argument((fs::path(folder) / kFileName).string(), ": family '", family,
                            "' needs an engine for '", role, "' under 'engines'");
  }
  return (fs::path(folder) / it->second).string();
}

}  // namespace voxrt::stream
