// voxrt inspect: what an engine holds (I/O, profiles, states, final layers with the original
// nodes they came from, tactics, times, memory plan, metadata), as text or JSON.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "backends/device_backend.h"
#include "commands.h"
#include "runtime/engine_impl.h"

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

int run_inspect(const std::string& path, bool json, bool all_metadata) {
  auto engine = Engine::load_file(path);
  if (!engine) {
    std::cerr << "error: " << engine.status().message() << "\n";
    return 1;
  }
  const EngineImpl& impl = (*engine)->impl();
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
  };
  if (json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "engine      " << path << " (" << impl.file_bytes << " bytes)\n"
            << "target      " << j["target"]["device"].get<std::string>() << " "
            << j["target"]["precision"].get<std::string>() << " | " << contents.target.fingerprint
            << "\n"
            << "builder     " << contents.target.builder_version << ", model hash "
            << j["model_hash"].get<std::string>() << "\n";
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
            << contents.memory_plan.weights_bytes << " bytes\n\n";
  // The tactic column fits the longest name (packed_directions_in_turn_fp16 is 30 characters).
  std::size_t tactic_width = 18;
  for (const auto& l : layers)
    tactic_width = std::max(tactic_width, l["tactic"].get<std::string>().size() + 2);
  const int tactic_column = static_cast<int>(tactic_width);
  std::cout << std::left << std::setw(4) << "#" << std::setw(28) << "layer" << std::setw(16) << "op"
            << std::setw(tactic_column) << "tactic" << std::setw(6) << "prec" << std::right
            << std::setw(10) << "time_us"
            << "  from\n";
  int index = 0;
  for (const auto& l : layers) {
    std::string origin;
    for (const auto& o : l["origin"]) origin += (origin.empty() ? "" : ", ") + o.get<std::string>();
    std::cout << std::left << std::setw(4) << index++ << std::setw(28)
              << l["name"].get<std::string>().substr(0, 27) << std::setw(16)
              << l["op"].get<std::string>() << std::setw(tactic_column)
              << l["tactic"].get<std::string>() << std::setw(6) << l["precision"].get<std::string>()
              << std::right << std::setw(10) << std::fixed << std::setprecision(1)
              << l["time_us"].get<double>() << "  " << origin << "\n";
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
  CLI::App* cmd =
      app.add_subcommand("inspect", "Show an engine's layers, tactics, profiles and memory plan");
  cmd->footer(
      "Example:\n  voxrt inspect model.engine --json | jq '.layers[] | select(.time_us > 100)'");
  cmd->add_option("engine", *path, "Engine file")->required()->check(CLI::ExistingFile);
  cmd->add_flag("--json", *json, "Print one JSON object");
  cmd->add_flag("--all-metadata", *all, "Do not shorten long metadata values");
  cmd->callback([=, &exit_code] { exit_code = run_inspect(*path, *json, *all); });
}

}  // namespace voxrt::cli
