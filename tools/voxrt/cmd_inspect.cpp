// voxrt inspect: what an engine holds (I/O, profiles, states, final layers with the original
// nodes they came from, tactics, times, memory plan, metadata), as text or JSON.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/device_backend.h"
#include "commands.h"
#include "runtime/engine_description.h"

namespace voxrt::cli {
namespace {

std::string shape_text(const TensorInfo& t) {
  std::string s;
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    if (i) s += "x";
    s += t.dims[i] >= 0 ? std::to_string(t.dims[i])
                        : (t.dim_names[i].empty() ? "?" : t.dim_names[i]);
  }
  return s.empty() ? "scalar" : s;
}

nlohmann::json io_json(const std::vector<TensorInfo>& list) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : list)
    a.push_back({{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", shape_text(t)}});
  return a;
}

// Text cells of at most `width` characters: longer text is cut at '/', '.', '_' where it can be,
// and goes on in the next rows (so a layer's full name is always shown).
std::vector<std::string> wrap_cell(const std::string& text, std::size_t width) {
  std::vector<std::string> rows;
  std::size_t at = 0;
  while (text.size() - at > width) {
    std::size_t cut = at + width;
    for (std::size_t i = at + width; i > at + width / 2; --i) {
      const char c = text[i - 1];
      if (c == '/' || c == '.' || c == '_' || c == ':' || c == '-') {
        cut = i;
        break;
      }
    }
    rows.push_back(text.substr(at, cut - at));
    at = cut;
  }
  rows.push_back(text.substr(at));
  return rows;
}

int run_inspect(const std::string& path, bool json, bool all_metadata, bool wide) {
  auto described = runtime::describe_engine_file(path);
  if (!described) {
    std::cerr << "error: " << described.status().message() << "\n";
    return 1;
  }
  // It is read, not run: an engine for another CPU or for CUDA is shown on any machine.
  const runtime::EngineDescription& impl = *described;
  const auto& contents = impl.contents;
  auto order = contents.graph->topological_order();
  nlohmann::json layers = nlohmann::json::array();
  double total_us = 0;
  for (const ir::Node* n : *order) {
    const double us = n->attrs.get_float(runtime::kTimeUsAttr, 0);
    total_us += us;
    layers.push_back(
        {{"name", n->name},
         {"op", std::string(ir::op_name(n->op))},
         {"origin", n->origin},
         {"tactic", n->attrs.get_string(runtime::kTacticNameAttr,
                                        n->op == ir::OpKind::kIf ? "control_flow" : "view")},
         {"precision",
          std::string(precision_name(backends::layer_precision(*n, contents.target.precision)))},
         {"time_us", us}});
    if (n->attrs.has(backends::cpu::quantized::kInputScaleAttr)) {
      // INT8 layers: the calibrated quantization of the activation input (the weights are
      // symmetric per output channel, their scales derived from the weights when loading).
      namespace quantized = backends::cpu::quantized;
      layers.back()["int8"] = {
          {"input_scale", n->attrs.get_float(quantized::kInputScaleAttr, 0)},
          {"input_zero_point", n->attrs.get_int(quantized::kInputZeroPointAttr, 0)},
          {"input_range", n->attrs.get_floats(quantized::kInputRangeAttr)}};
    }
    if (n->attrs.has(runtime::kScratchNoteAttr))
      layers.back()["scratch"] = n->attrs.get_string(runtime::kScratchNoteAttr, "");
    if (n->attrs.has(runtime::kProfileTacticsAttr)) {
      // Engines with several profiles: what each profile's opt shapes chose, and its time.
      nlohmann::json per_profile = nlohmann::json::array();
      const auto names = n->attrs.get_strings(runtime::kProfileTacticNamesAttr);
      const auto times = n->attrs.get_floats(runtime::kProfileTimesUsAttr);
      for (std::size_t p = 0; p < names.size(); ++p) {
        per_profile.push_back(
            {{"tactic", names[p]}, {"time_us", p < times.size() ? times[p] : 0.0f}});
      }
      layers.back()["profiles"] = per_profile;
    }
  }
  nlohmann::json profiles = nlohmann::json::array();
  for (const auto& p : contents.profiles) {
    nlohmann::json inputs;
    for (const auto& [name, r] : p.inputs) {
      inputs[name] = {{"min", dims_to_string(r.min)},
                      {"opt", dims_to_string(r.opt)},
                      {"max", dims_to_string(r.max)}};
    }
    profiles.push_back({{"name", p.name}, {"inputs", inputs}});
  }
  nlohmann::json states = nlohmann::json::array();
  for (const auto& s : contents.states)
    states.push_back({{"input", s.input}, {"output", s.output}});
  nlohmann::json metadata;
  for (const auto& [k, v] : contents.graph->metadata)
    metadata[k] = (all_metadata || v.size() <= 120) ? v : v.substr(0, 117) + "...";
  nlohmann::json j = {
      {"engine", path},
      {"file_bytes", impl.file_bytes},
      {"target",
       {{"device", contents.target.device == DeviceKind::kCpu ? "cpu" : "cuda"},
        {"precision", std::string(precision_name(contents.target.precision))},
        {"fingerprint", contents.target.fingerprint},
        {"builder_version", contents.target.builder_version}}},
      {"model_hash", str_cat(std::hex, contents.model_hash)},
      {"inputs", io_json(impl.inputs)},
      {"outputs", io_json(impl.outputs)},
      {"profiles", profiles},
      {"states", states},
      {"layers", layers},
      {"memory_plan",
       {{"arena_peak_bytes", contents.memory_plan.peak_bytes},
        {"unplanned_bytes", contents.memory_plan.unplanned_bytes},
        {"weights_bytes", contents.memory_plan.weights_bytes}}},
      {"metadata", metadata},
      {"runs_here", impl.runs_here.is_ok()},
  };
  if (!impl.runs_here) j["runs_here_error"] = impl.runs_here.message();
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "engine      " << path << " (" << impl.file_bytes << " bytes)\n"
            << "target      " << j["target"]["device"].get<std::string>() << " "
            << j["target"]["precision"].get<std::string>() << " | " << contents.target.fingerprint
            << "\n"
            << "builder     " << contents.target.builder_version << ", model hash "
            << j["model_hash"].get<std::string>() << "\n"
            << "runs here   "
            << (impl.runs_here ? std::string("yes") : "no: " + impl.runs_here.message()) << "\n";
  for (const auto& t : impl.inputs)
    std::cout << "input       " << t.name << " " << dtype_name(t.dtype) << " " << shape_text(t)
              << "\n";
  for (const auto& t : impl.outputs)
    std::cout << "output      " << t.name << " " << dtype_name(t.dtype) << " " << shape_text(t)
              << "\n";
  for (const auto& p : contents.profiles) {
    for (const auto& [name, r] : p.inputs) {
      std::cout << "profile     " << p.name << " " << name << " " << dims_to_string(r.min) << " / "
                << dims_to_string(r.opt) << " / " << dims_to_string(r.max) << "\n";
    }
  }
  for (const auto& s : contents.states)
    std::cout << "state       " << s.input << " -> " << s.output << "\n";
  std::cout << "memory      arena " << contents.memory_plan.peak_bytes << " bytes planned (vs "
            << contents.memory_plan.unplanned_bytes << " unplanned), weights "
            << contents.memory_plan.weights_bytes << " bytes\n";
  // Scratch outside the plan (attention's score strips), once per distinct note.
  std::vector<std::string> notes;
  for (const auto& l : layers) {
    if (!l.contains("scratch")) continue;
    const std::string note = l["scratch"].get<std::string>();
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
  }
  for (const auto& note : notes) std::cout << "            " << note << "\n";
  std::cout << "\n";
  // Columns two spaces apart, each as wide as its longest cell; a layer name longer than
  // the layer column goes on in the next rows (--wide: one row, the column as wide as needed).
  std::size_t name_width = 4, op_width = 2, tactic_width = 6;
  for (const auto& l : layers) {
    name_width = std::max(name_width, l["name"].get<std::string>().size());
    op_width = std::max(op_width, l["op"].get<std::string>().size());
    tactic_width = std::max(tactic_width, l["tactic"].get<std::string>().size());
  }
  if (!wide) name_width = std::min<std::size_t>(name_width, 40);
  const std::size_t index_width = std::to_string(layers.size()).size();
  auto cell = [](std::string text, std::size_t width) {
    text.resize(std::max(text.size(), width), ' ');
    return text;
  };
  std::cout << cell("#", index_width) << "  " << cell("layer", name_width) << "  "
            << cell("op", op_width) << "  " << cell("tactic", tactic_width) << "  "
            << cell("prec", 4) << "  " << std::setw(10) << "time_us"
            << "  from\n";
  int index = 0;
  for (const auto& l : layers) {
    std::string origin;
    for (const auto& o : l["origin"]) origin += (origin.empty() ? "" : ", ") + o.get<std::string>();
    const auto name_rows = wrap_cell(l["name"].get<std::string>(), wide ? 1u << 20 : name_width);
    std::ostringstream time;
    time << std::fixed << std::setprecision(1) << l["time_us"].get<double>();
    std::cout << cell(std::to_string(index++), index_width) << "  "
              << cell(name_rows[0], name_width) << "  "
              << cell(l["op"].get<std::string>(), op_width) << "  "
              << cell(l["tactic"].get<std::string>(), tactic_width) << "  "
              << cell(l["precision"].get<std::string>(), 4) << "  " << std::setw(10) << time.str()
              << "  " << origin << "\n";
    for (std::size_t r = 1; r < name_rows.size(); ++r)
      std::cout << cell("", index_width) << "  " << name_rows[r] << "\n";
  }
  std::cout << "total time at opt shapes: " << std::fixed << std::setprecision(1) << total_us
            << " us\n";
  // Layers whose tactic depends on the profile (each profile's kernels were timed at its own opt
  // shapes; the table above shows profile 0's).
  bool header = false;
  for (const auto& l : layers) {
    if (!l.contains("profiles")) continue;
    const auto& per_profile = l["profiles"];
    bool differs = false;
    for (const auto& entry : per_profile) differs = differs || entry["tactic"] != l["tactic"];
    if (!differs) continue;
    if (!header) {
      std::cout << "tactics per profile (layers where they differ):\n";
      header = true;
    }
    std::cout << "  " << l["name"].get<std::string>() << ":";
    for (std::size_t p = 0; p < per_profile.size(); ++p) {
      const std::string profile_name =
          p < contents.profiles.size() ? contents.profiles[p].name : std::to_string(p);
      std::cout << (p ? ", " : " ") << profile_name << " "
                << per_profile[p]["tactic"].get<std::string>() << " ("
                << per_profile[p]["time_us"].get<double>() << " us)";
    }
    std::cout << "\n";
  }
  bool int8_header = false;
  for (const auto& l : layers) {
    if (!l.contains("int8")) continue;
    if (!int8_header) {
      std::cout << "int8 layers (activation input quantization, per tensor; weights per output "
                   "channel):\n";
      int8_header = true;
    }
    const auto& q = l["int8"];
    std::cout << "  " << std::left << std::setw(28) << l["name"].get<std::string>() << std::right
              << " scale " << std::defaultfloat << std::setprecision(6)
              << q["input_scale"].get<double>() << " zero point "
              << q["input_zero_point"].get<std::int64_t>();
    if (q["input_range"].size() == 2) {
      std::cout << " observed range [" << q["input_range"][0].get<double>() << ", "
                << q["input_range"][1].get<double>() << "]";
    }
    std::cout << "\n";
  }
  if (!contents.graph->metadata.empty()) {
    std::cout << "\nmetadata\n";
    for (const auto& [k, v] : metadata.items())
      std::cout << "  " << k << " = " << v.get<std::string>() << "\n";
  }
  return 0;
}

}  // namespace

void add_inspect_command(CLI::App& app, int& exit_code) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  auto all = std::make_shared<bool>(false);
  auto wide = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show an engine's layers, tactics, profiles and memory plan");
  cmd->footer(
      "The engine is read, not run: engines built for another CPU or for CUDA are shown on any\n"
      "machine, with whether (and why not) they run here.\n"
      "Examples:\n  voxrt inspect model.engine --wide\n"
      "  voxrt inspect model.engine --json | jq '.layers[] | select(.time_us > 100)'");
  cmd->add_option("engine", *path, "Engine file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->add_flag("--all-metadata", *all, "Do not shorten long metadata values");
  cmd->add_flag("--wide", *wide,
                "Layer names on one line however long (default: names longer than 40 characters "
                "go on in the next rows)");
  cmd->callback([=, &exit_code] { exit_code = run_inspect(*path, *json, *all, *wide); });
}

}  // namespace voxrt::cli
