#include "builder/timing_cache.h"

#include <fstream>
#include <iomanip>
#include <sstream>

#include "runtime/byte_stream.h"

namespace voxrt::builder {
namespace {
constexpr char kHeader[] = "voxrt-timing-cache 1";

void describe_attribute(std::ostringstream& out, const ir::AttributeValue& value) {
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, float> ||
                      std::is_same_v<T, std::string>) {
          out << v;
        } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>> ||
                             std::is_same_v<T, std::vector<float>> ||
                             std::is_same_v<T, std::vector<std::string>>) {
          for (const auto& x : v) out << x << ',';
        } else if constexpr (std::is_same_v<T, Tensor>) {
          out << dtype_name(v.dtype()) << dims_to_string(v.dims());
        } else {
          out << "graph";
        }
      },
      value);
}
}  // namespace

std::string TimingCache::key(const ir::Node& node, std::span<const Tensor* const> inputs,
                             const backends::TacticInfo& tactic, const std::string& fingerprint,
                             int threads) {
  std::ostringstream desc;
  desc << ir::op_name(node.op) << '|';
  for (const auto& [name, value] : node.attrs.all()) {
    if (name.rfind("voxrt.", 0) == 0) continue;  // the builder's own notes
    desc << name << '=';
    describe_attribute(desc, value);
    desc << ';';
  }
  desc << '|';
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]) {
      desc << "-;";
      continue;
    }
    const bool constant = i < node.inputs.size() && node.inputs[i] && node.inputs[i]->is_constant();
    desc << dtype_name(inputs[i]->dtype()) << dims_to_string(inputs[i]->dims())
         << (constant ? "c" : "") << ';';
  }
  desc << '|' << tactic.id << ':' << tactic.name << '|' << fingerprint << '|' << threads;
  const std::string s = desc.str();
  std::ostringstream hex;
  hex << std::hex << std::setw(16) << std::setfill('0') << runtime::fnv1a64(s.data(), s.size())
      << std::setw(16) << runtime::fnv1a64(s.data(), s.size(), 0x9e3779b97f4a7c15ull);
  return hex.str();
}

Expected<TimingCache> TimingCache::load(const std::string& path) {
  TimingCache cache;
  std::ifstream in(path);
  if (!in) return cache;
  std::string line;
  if (!std::getline(in, line) || line != kHeader) {
    return corrupt(path, ":1: not a voxrt timing cache (expected the header '", kHeader, "')");
  }
  int line_number = 1;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty()) continue;
    std::istringstream fields(line);
    std::string key;
    double time_us = 0;
    if (!(fields >> key >> time_us) || key.size() != 32 || time_us < 0) {
      return corrupt(path, ":", line_number, ": expected '<32 hex digits> <time in us>', found '",
                     line, "'");
    }
    cache.entries_[key] = time_us;
  }
  return cache;
}

Status TimingCache::save(const std::string& path) const {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return io_error(tmp, ": cannot write the timing cache");
    out << kHeader << '\n';
    for (const auto& [key, time_us] : entries_)
      out << key << ' ' << std::setprecision(9) << time_us << '\n';
    if (!out) return io_error(tmp, ": write failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return io_error(path, ": cannot replace the timing cache");
  return Status::ok();
}

std::optional<double> TimingCache::find(const std::string& k) const {
  auto it = entries_.find(k);
  if (it == entries_.end()) return std::nullopt;
  return it->second;
}

}  // namespace voxrt::builder
