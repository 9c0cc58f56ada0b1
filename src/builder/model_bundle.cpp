#include "builder/model_bundle.h"

#include <filesystem>
#include <fstream>

namespace voxrt::builder {

std::string bundle_metadata_path(const std::string& onnx_path) {
  std::filesystem::path path(onnx_path);
  if (path.extension() == ".onnx") path.replace_extension();
  return path.string() + ".metadata.txt";
}

Status read_bundle_metadata(const std::string& onnx_path,
                            std::map<std::string, std::string>& metadata, bool& found) {
  const std::string path = bundle_metadata_path(onnx_path);
  found = false;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::ok();
  std::ifstream in(path);
  if (!in) return invalid_argument(path, ": cannot be read");
  found = true;
  std::map<std::string, std::string> read;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos || eq == first) {
      return invalid_argument(path, ":", line_number, ": expected KEY=VALUE, found '", line, "'");
    }
    auto key = line.substr(first, eq - first);
    while (!key.empty() && (key.back() == ' ' || key.back() == '\t')) key.pop_back();
    read[key] = line.substr(eq + 1);
  }
  for (auto& [key, value] : read) metadata[key] = std::move(value);
  return Status::ok();
}

}  // namespace voxrt::builder
