#include "builder/calibration/calibration_cache.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace voxrt::builder::calibration {
namespace {

constexpr char kMagic[] = "voxrt-int8-calibration 1";

std::string round_trip(double v) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.17g", v);
  return buffer;
}

// Reads "<length> <name>" from `in`.
bool read_name(std::istringstream& in, std::string& name) {
  std::size_t length = 0;
  if (!(in >> length) || length > 4096 || in.get() != ' ') return false;
  name.resize(length);
  return static_cast<bool>(in.read(name.data(), static_cast<std::streamsize>(length)));
}

std::string rest_of(std::istringstream& in) {
  std::string rest;
  std::getline(in >> std::ws, rest);
  return rest;
}

}  // namespace

Expected<std::optional<CalibrationCache>> CalibrationCache::load(const std::string& path) {
  std::ifstream file(path);
  if (!file) return std::optional<CalibrationCache>();
  CalibrationCache cache;
  std::string line;
  int number = 0;
  const auto bad = [&](const std::string& what) {
    return invalid_argument("calibration cache ", path, " line ", number, ": ", what, ": '", line,
                            "'");
  };
  while (std::getline(file, line)) {
    ++number;
    if (number == 1) {
      if (line != kMagic) return bad(str_cat("expected '", kMagic, "'"));
      continue;
    }
    if (line.empty()) continue;
    std::istringstream in(line);
    std::string kind;
    in >> kind;
    if (kind == "key") {
      cache.key = rest_of(in);
    } else if (kind == "data") {
      cache.data_fingerprint = rest_of(in);
    } else if (kind == "range") {
      std::string name;
      CachedRange r;
      int symmetric = 0;
      if (!read_name(in, name) ||
          !(in >> r.min >> r.max >> r.quantization.scale >> r.quantization.zero_point >>
            symmetric) ||
          !(r.quantization.scale > 0) || r.quantization.zero_point < 0 ||
          r.quantization.zero_point > 255) {
        return bad(
            "expected range <length> <name> <min> <max> <scale > 0> <zero point 0..255> "
            "<0|1>");
      }
      r.symmetric = symmetric != 0;
      cache.ranges[name] = r;
    } else if (kind == "layer") {
      Int8LayerReport layer;
      int int8 = 0;
      if (!read_name(in, layer.node) ||
          !(in >> int8 >> layer.output_error >> layer.argmax_changed)) {
        return bad("expected layer <length> <name> <0|1> <output error> <argmax changed> <reason>");
      }
      layer.int8 = int8 != 0;
      layer.reason = rest_of(in);
      cache.layers.push_back(std::move(layer));
    } else {
      return bad("expected key, data, range or layer");
    }
  }
  if (number == 0) return bad("empty file");
  return std::optional<CalibrationCache>(std::move(cache));
}

Status CalibrationCache::save(const std::string& path) const {
  std::ostringstream out;
  out << kMagic << "\nkey " << key << "\ndata " << data_fingerprint << "\n";
  for (const auto& [name, r] : ranges) {
    out << "range " << name.size() << " " << name << " " << round_trip(r.min) << " "
        << round_trip(r.max) << " " << round_trip(r.quantization.scale) << " "
        << r.quantization.zero_point << " " << (r.symmetric ? 1 : 0) << "\n";
  }
  for (const auto& layer : layers) {
    out << "layer " << layer.node.size() << " " << layer.node << " " << (layer.int8 ? 1 : 0) << " "
        << round_trip(layer.output_error) << " " << round_trip(layer.argmax_changed) << " "
        << layer.reason << "\n";
  }
  // Written beside and renamed, so a build killed midway never leaves half a cache.
  const std::string temporary = path + ".partial";
  {
    std::ofstream file(temporary, std::ios::trunc);
    file << out.str();
    if (!file) return invalid_argument("calibration cache ", path, ": cannot write ", temporary);
  }
  std::error_code error;
  std::filesystem::rename(temporary, path, error);
  if (error) return invalid_argument("calibration cache ", path, ": ", error.message());
  return Status::ok();
}

}  // namespace voxrt::builder::calibration
