#include "model_import/import_support.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "builder/build_graph.h"
#include "runtime/byte_stream.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

namespace {

std::vector<std::string> matching_files(const std::string& dir, const std::string& prefix,
                                        const std::string& suffix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name.size() >= prefix.size() + suffix.size() && name.starts_with(prefix) &&
        name.ends_with(suffix))
      names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

bool has_file(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  return !matching_files(dir, prefix, suffix).empty();
}

Expected<std::string> find_one_file(const std::string& dir, const std::string& prefix,
                                    const std::string& suffix, const std::string& role) {
  std::vector<std::string> names = matching_files(dir, prefix, suffix);
  std::vector<std::string> full_precision;
  for (const auto& n : names) {
    if (n.find(".int8.") == std::string::npos && n.find(".fp16.") == std::string::npos)
      full_precision.push_back(n);
  }
  const std::vector<std::string>& pick = full_precision.empty() ? names : full_precision;
  if (pick.size() == 1) return (fs::path(dir) / pick[0]).string();
  if (pick.empty()) {
    return not_found(dir, ": no ", role, " file (expected ", prefix, "*", suffix, ")");
  }
  std::string list;
  for (const auto& n : pick) list += (list.empty() ? "" : ", ") + n;
  return invalid_argument(dir, ": more than one ", role, " file (", prefix, "*", suffix,
                          "): ", list, "; keep one");
}

Expected<int> exporter_int(const ir::Graph& graph, const std::string& key,
                           const std::string& file) {
  auto it = graph.metadata.find(key);
  if (it == graph.metadata.end()) {
    return invalid_argument(file, ": metadata_props has no '", key,
                            "' (the exporter writes it; was the file exported by its script?)");
  }
  try {
    std::size_t used = 0;
    const int value = std::stoi(it->second, &used);
    if (used != it->second.size()) throw std::invalid_argument("trailing");
    return value;
  } catch (...) {
    return invalid_argument(file, ": metadata '", key, "' must be an integer, found '", it->second,
                            "'");
  }
}

int batch_axis_of(const ir::Value& value, const std::string& batch_symbol) {
  for (std::size_t d = 0; d < value.shape.size(); ++d) {
    if (!batch_symbol.empty() && value.shape[d].symbol == batch_symbol) return static_cast<int>(d);
  }
  return -1;
}

Status make_states_batch_first(ir::Graph& graph, const std::vector<ExportedState>& states) {
  for (const ExportedState& s : states) {
    if (s.batch_axis == 0) continue;
    ir::Value* in = graph.find_value(s.input);
    ir::Value* out = graph.find_value(s.output);
    if (!in || !out) return not_found("state ", s.input, ":", s.output, " is not in the graph");
    const auto rank = static_cast<int>(in->shape.size());
    if (s.batch_axis < 0 || s.batch_axis >= rank || out->shape.size() != in->shape.size()) {
      return invalid_argument("state ", s.input, ": batch axis ", s.batch_axis, " of rank ", rank,
                              " (output rank ", out->shape.size(), ")");
    }
    const auto a = static_cast<std::size_t>(s.batch_axis);
    // Input: a batch-first value under the exporter's name, transposed to the exporter's layout.
    ir::SymShape first = in->shape;
    std::rotate(first.begin(), first.begin() + static_cast<std::ptrdiff_t>(a),
                first.begin() + static_cast<std::ptrdiff_t>(a) + 1);
    in->name = graph.unique_name(s.input + "/exported_layout");
    ir::Value* batch_first_in = graph.add_value(s.input, in->dtype, first);
    std::vector<std::int64_t> to_exported(static_cast<std::size_t>(rank));
    for (int i = 0; i < rank; ++i)
      to_exported[static_cast<std::size_t>(i)] =
          i == s.batch_axis ? 0 : (i < s.batch_axis ? i + 1 : i);
    ir::Node* t_in =
        graph.add_node(ir::OpKind::kTranspose, graph.unique_name(s.input + "/to_exported"),
                       {batch_first_in}, {in});
    t_in->attrs.set("perm", to_exported);
    t_in->opset = 13;
    std::replace(graph.inputs.begin(), graph.inputs.end(), in, batch_first_in);
    // Output: the exporter's value transposed batch-first, under the exporter's output name.
    ir::SymShape out_first = out->shape;
    std::rotate(out_first.begin(), out_first.begin() + static_cast<std::ptrdiff_t>(a),
                out_first.begin() + static_cast<std::ptrdiff_t>(a) + 1);
    const std::string output_name = out->name;
    out->name = graph.unique_name(output_name + "/exported_layout");
    ir::Value* batch_first_out = graph.add_value(output_name, out->dtype, out_first);
    std::vector<std::int64_t> to_batch_first(static_cast<std::size_t>(rank));
    to_batch_first[0] = s.batch_axis;
    for (int i = 1; i < rank; ++i)
      to_batch_first[static_cast<std::size_t>(i)] = i <= s.batch_axis ? i - 1 : i;
    ir::Node* t_out =
        graph.add_node(ir::OpKind::kTranspose, graph.unique_name(output_name + "/to_batch_first"),
                       {out}, {batch_first_out});
    t_out->attrs.set("perm", to_batch_first);
    t_out->opset = 13;
    std::replace(graph.outputs.begin(), graph.outputs.end(), out, batch_first_out);
  }
  return graph.validate();
}

Status build_bundle_engine(std::unique_ptr<ir::Graph> graph, const std::string& source_file,
                           const BuilderConfig& config, const std::string& bundle_dir,
                           const std::string& engine_file, const ModelDirImportOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t hash = 0;
  {
    std::ifstream in(source_file, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string s = bytes.str();
    hash = runtime::fnv1a64(s.data(), s.size());
  }
  BuildReport report;
  auto engine = builder::build_engine_from_graph(std::move(graph), hash, config, &report);
  if (!engine) return engine.status().with_context(source_file);
  const fs::path path = fs::path(bundle_dir) / engine_file;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(engine->data(), static_cast<std::streamsize>(engine->size()));
  if (!out) return io_error("cannot write ", path.string());
  if (options.on_step) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ostringstream line;
    line << engine_file << ": built from " << fs::path(source_file).filename().string() << " in "
         << seconds << " s (" << engine->size() << " bytes, " << report.tactics_timed
         << " tactics timed)";
    options.on_step(line.str());
    for (const auto& change : report.pass_changes) {
      if (change.starts_with("warning:")) options.on_step("  " + change);
    }
  }
  return Status::ok();
}

Expected<std::vector<std::string>> read_tokens_txt(const std::string& path) {
  std::ifstream in(path);
  if (!in) return not_found(path, ": cannot read the tokens file");
  std::map<int, std::string> by_id;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto space = line.find_last_of(" \t");
    if (space == std::string::npos) {
      // A lone id: the piece is a space (sherpa-onnx writes " 3" for character vocabularies).
      return invalid_argument(path, ":", line_number, ": expected '<piece> <id>', found '", line,
                              "'");
    }
    int id = -1;
    try {
      std::size_t used = 0;
      id = std::stoi(line.substr(space + 1), &used);
      if (used != line.size() - space - 1 || id < 0) throw std::invalid_argument("id");
    } catch (...) {
      return invalid_argument(path, ":", line_number, ": expected an id after the piece, found '",
                              line.substr(space + 1), "'");
    }
    std::string piece = line.substr(0, space);
    if (piece.empty()) piece = " ";
    if (!by_id.emplace(id, piece).second)
      return invalid_argument(path, ":", line_number, ": id ", id, " appears twice");
  }
  std::vector<std::string> pieces;
  for (const auto& [id, piece] : by_id) {
    if (id != static_cast<int>(pieces.size()))
      return invalid_argument(path, ": ids must be 0..N-1 without gaps; id ", pieces.size(),
                              " is missing");
    pieces.push_back(piece);
  }
  if (pieces.empty()) return invalid_argument(path, ": no tokens");
  return pieces;
}

std::map<std::string, std::string> sherpa_fbank_metadata(int num_bins) {
  return {
      {"voxrt.feature.type", "fbank"},
      {"voxrt.feature.num_bins", std::to_string(num_bins)},
      {"voxrt.feature.sample_rate_hz", "16000"},
      {"voxrt.feature.frame_length_ms", "25"},
      {"voxrt.feature.frame_shift_ms", "10"},
      {"voxrt.feature.dither", "0"},
      {"voxrt.feature.preemphasis", "0.97"},
      {"voxrt.feature.window", "povey"},
      {"voxrt.feature.remove_dc_offset", "1"},
      {"voxrt.feature.snip_edges", "0"},
      {"voxrt.feature.low_freq_hz", "20"},
      {"voxrt.feature.high_freq_hz", "-400"},
      {"voxrt.feature.waveform_scale", "32768"},
      {"voxrt.feature.use_power", "1"},
      {"voxrt.feature.round_to_power_of_two", "1"},
  };
}

std::string vocabulary_lines(const std::vector<std::string>& pieces) {
  std::string out;
  for (const auto& p : pieces) out += p + "\n";
  return out;
}

}  // namespace voxrt::model_import
