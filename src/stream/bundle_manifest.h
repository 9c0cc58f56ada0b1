// An engine bundle (voxrt build --model-dir): one folder with every engine of a model, the
// files its vocabulary needs and bundle.json, which names the family, the engines by role and
// the model contract's keys (docs/model_contract.md). The Recognizer opens the folder; it never
// reads the ONNX files or the exporter's metadata again.
#pragma once

#include <map>
#include <string>

#include "voxrt/status.h"

namespace voxrt::stream {

struct BundleManifest {
  static constexpr const char* kFileName = "bundle.json";
  static constexpr int kVersion = 1;

  // "ctc_streaming", "transducer", ...
  std::string family;
  // Role ("encoder", "decoder", "joiner", "model") -> engine file name inside the folder.
  std::map<std::string, std::string> engines;
  // The contract's keys (voxrt.*), as an engine's metadata holds them.
  std::map<std::string, std::string> metadata;
  // Where it came from: the layout recognised, the files read (informational).
  std::map<std::string, std::string> source;

  // `path`: the folder or its bundle.json. Errors name the file and the key.
  static Expected<BundleManifest> read(const std::string& path);
  Status write(const std::string& folder) const;
  // The engine file for `role`, as a path; an error names the role and the manifest.
  Expected<std::string> engine_path(const std::string& folder, const std::string& role) const;
};

// True when `path` is a bundle folder or a bundle.json.
bool is_bundle_path(const std::string& path);
// The folder of a bundle path (the path itself, or the manifest's folder).
std::string bundle_folder(const std::string& path);

}  // namespace voxrt::stream
