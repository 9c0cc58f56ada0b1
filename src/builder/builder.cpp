#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "backends/cpu/cpu_backend.h"
#include "backends/device_backend.h"
#include "builder/build_graph.h"
#include "builder/calibration/int8_calibration.h"
#include "builder/layer_precision.h"
#include "builder/model_bundle.h"
#include "builder/pass_pipeline.h"
#include "builder/tactic_selector.h"
#include "ir/shape_inference.h"
#include "onnx_import/importer.h"
#include "runtime/byte_stream.h"
#include "runtime/engine_format.h"
#include "voxrt/builder.h"

namespace voxrt {
namespace {

void progress(const BuilderConfig& config, const char* stage, int done, int total,
              std::string detail = {}) {
  if (config.on_progress) config.on_progress(BuildProgress{stage, done, total, std::move(detail)});
}

Status bind_fixed_inputs(ir::Graph& graph, const BuilderConfig& config) {
  for (const auto& [name, tensor] : config.fixed_inputs) {
    auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                           [&wanted = name](ir::Value* v) { return v->name == wanted; });
    if (it == graph.inputs.end())
      return not_found("--fixed-input '", name, "': the model has no input of that name");
    ir::Value* v = *it;
    if (v->dtype != tensor.dtype()) {
      return invalid_argument("--fixed-input '", name, "': the input is ", dtype_name(v->dtype),
                              ", the value is ", dtype_name(tensor.dtype()));
    }
    v->constant = tensor.clone();
    v->shape = ir::sym_shape_from_dims(tensor.dims());
    v->rank_known = true;
    graph.inputs.erase(it);
  }
  return Status::ok();
}

// Dims that every profile pins to one size become known, so shape chains over them fold.
Status apply_profiles(ir::Graph& graph, const BuilderConfig& config) {
  for (const auto& profile : config.profiles) {
    for (const auto& [name, range] : profile.inputs) {
      auto it = std::find_if(graph.inputs.begin(), graph.inputs.end(),
                             [&wanted = name](ir::Value* v) { return v->name == wanted; });
      if (it == graph.inputs.end()) {
        return not_found("profile '", profile.name, "': the model has no input '", name, "'");
      }
      ir::Value* v = *it;
      if (v->rank_known && v->shape.size() != range.opt.size()) {
        return invalid_argument("profile '", profile.name, "': input '", name, "' has rank ",
                                v->shape.size(), " (", ir::sym_shape_to_string(v->shape),
                                "), the profile gives rank ", range.opt.size());
      }
      for (std::size_t d = 0; v->rank_known && d < v->shape.size(); ++d) {
        if (v->shape[d].is_known() &&
            (range.min[d] != v->shape[d].value || range.max[d] != v->shape[d].value)) {
          return invalid_argument("profile '", profile.name, "': input '", name, "' dim ", d,
                                  " is fixed at ", v->shape[d].value,
                                  " in the model, the profile asks for ", range.min[d], "..",
                                  range.max[d]);
        }
      }
    }
  }
  for (ir::Value* v : graph.inputs) {
    for (std::size_t d = 0; d < v->shape.size(); ++d) {
      if (v->shape[d].is_known() || config.profiles.empty()) continue;
      std::optional<std::int64_t> pinned;
      bool all = true;
      for (const auto& profile : config.profiles) {
        auto it = profile.inputs.find(v->name);
        if (it == profile.inputs.end() || it->second.min[d] != it->second.max[d] ||
            (pinned && *pinned != it->second.min[d])) {
          all = false;
          break;
        }
        pinned = it->second.min[d];
      }
      if (all && pinned) v->shape[d] = ir::Dim::known(*pinned);
    }
  }
  return Status::ok();
}

// A run uses the first profile that admits its shapes, so a profile whose every admitted shape an
// earlier profile admits too is never used (its tactics would be timed for nothing): a warning.
// Profile q covers p when every input q bounds is bounded by p within q's ranges.
std::vector<std::string> shadowed_profiles(const std::vector<OptimizationProfile>& profiles) {
  const auto covers = [](const OptimizationProfile& q, const OptimizationProfile& p) {
    for (const auto& [name, q_range] : q.inputs) {
      auto it = p.inputs.find(name);
      if (it == p.inputs.end()) return false;  // p lets this input be anything; q does not
      const ShapeRange& p_range = it->second;
      if (p_range.min.size() != q_range.min.size()) return false;
      for (std::size_t d = 0; d < q_range.min.size(); ++d) {
        if (p_range.min[d] < q_range.min[d] || p_range.max[d] > q_range.max[d]) return false;
      }
    }
    return true;
  };
  std::vector<std::string> warnings;
  for (std::size_t p = 1; p < profiles.size(); ++p) {
    for (std::size_t q = 0; q < p; ++q) {
      if (!covers(profiles[q], profiles[p])) continue;
      warnings.push_back(
          str_cat("warning: profile '", profiles[p].name,
                  "' is never used: every shape it admits fits the earlier profile '",
                  profiles[q].name, "', and a run takes the first profile that admits its shapes"));
      break;
    }
  }
  return warnings;
}

Status check_states(const ir::Graph& graph, const BuilderConfig& config) {
  for (const auto& s : config.states) {
    const ir::Value* in = nullptr;
    const ir::Value* out = nullptr;
    for (auto* v : graph.inputs) in = v->name == s.input ? v : in;
    for (auto* v : graph.outputs) out = v->name == s.output ? v : out;
    if (!in)
      return not_found("--state ", s.input, ":", s.output, ": the model has no input '", s.input,
                       "'");
    if (!out)
      return not_found("--state ", s.input, ":", s.output, ": the model has no output '", s.output,
                       "'");
    if (in->dtype != out->dtype) {
      return invalid_argument("--state ", s.input, ":", s.output, ": dtypes differ (",
                              dtype_name(in->dtype), " vs ", dtype_name(out->dtype), ")");
    }
  }
  return Status::ok();
}

}  // namespace

Expected<std::string> build_engine_from_onnx_file(const std::string& onnx_path,
                                                  const BuilderConfig& config,
                                                  BuildReport* report_out) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  progress(config, "import", 0, 1, onnx_path);
  VOXRT_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> graph,
                         onnx_import::import_model_file(onnx_path));
  progress(config, "import", 1, 1, onnx_path);
  bool bundle_found = false;
  VOXRT_RETURN_IF_ERROR(builder::read_bundle_metadata(onnx_path, graph->metadata, bundle_found));
  if (bundle_found) {
    progress(config, "metadata", 1, 1, builder::bundle_metadata_path(onnx_path));
  }
  std::uint64_t model_hash = 0;
  {
    std::ifstream in(onnx_path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    const std::string s = bytes.str();
    model_hash = runtime::fnv1a64(s.data(), s.size());
  }
  auto engine = builder::build_engine_from_graph(std::move(graph), model_hash, config, report_out);
  if (!engine) return engine.status().with_context(onnx_path);
  return engine;
}

}  // namespace voxrt

namespace voxrt::builder {

namespace {

Expected<std::string> build_resolved(std::unique_ptr<ir::Graph> graph, std::uint64_t model_hash,
                                     const BuilderConfig& config, BuildReport* report_out);

// A streaming model (docs/model_contract.md: voxrt.chunk_frames, and one non-state input
// [batch, frames, bins]) built without --profile is tuned at its own chunk, one stream:
// [1, chunk_frames, bins], and accepts 1..256 streams of 1..65536 frames, so any chunk and the
// whole-utterance call still run. Without it the profiling run took every dynamic dim as 1 and
// timed the kernels at one frame.
std::optional<OptimizationProfile> streaming_chunk_profile(const ir::Graph& graph,
                                                           const std::vector<StatePair>& states) {
  auto chunk = graph.metadata.find("voxrt.chunk_frames");
  if (chunk == graph.metadata.end()) return std::nullopt;
  std::int64_t chunk_frames = 0;
  try {
    chunk_frames = std::stoll(chunk->second);
  } catch (...) {
    return std::nullopt;
  }
  if (chunk_frames < 1) return std::nullopt;
  const ir::Value* features = nullptr;
  for (const ir::Value* v : graph.inputs) {
    const bool is_state = std::any_of(states.begin(), states.end(),
                                      [&](const StatePair& s) { return s.input == v->name; });
    if (is_state) continue;
    if (features != nullptr) return std::nullopt;  // more than one: not the contract's shape
    features = v;
  }
  if (features == nullptr || features->shape.size() != 3 || !features->shape[2].is_known())
    return std::nullopt;
  const std::int64_t bins = features->shape[2].value;
  OptimizationProfile profile;
  profile.name = "chunk";
  profile.inputs[features->name] =
      ShapeRange{{1, 1, bins}, {1, chunk_frames, bins}, {256, 65536, bins}};
  return profile;
}

}  // namespace

Expected<std::string> build_engine_from_graph(std::unique_ptr<ir::Graph> graph,
                                              std::uint64_t model_hash, const BuilderConfig& config,
                                              BuildReport* report_out) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  BuilderConfig resolved = config;
  // A model that declares its streaming states (voxrt.state_pairs, docs/model_contract.md)
  // needs no --state flags.
  auto declared = graph->metadata.find("voxrt.state_pairs");
  if (resolved.states.empty() && declared != graph->metadata.end() && !declared->second.empty()) {
    std::stringstream list(declared->second);
    for (std::string pair; std::getline(list, pair, ',');) {
      const auto colon = pair.find(':');
      if (colon == std::string::npos || colon == 0 || colon + 1 == pair.size()) {
        return invalid_argument("model metadata voxrt.state_pairs: '", pair, "' is not IN:OUT");
      }
      resolved.states.push_back(StatePair{pair.substr(0, colon), pair.substr(colon + 1)});
    }
  }
  std::string default_profile_note;
  if (resolved.profiles.empty()) {
    if (auto profile = streaming_chunk_profile(*graph, resolved.states)) {
      default_profile_note = str_cat(
          "no --profile: tuned at the model's chunk, ", profile->inputs.begin()->first, " ",
          dims_to_string(profile->inputs.begin()->second.opt), " (voxrt.chunk_frames), accepting ",
          dims_to_string(profile->inputs.begin()->second.min), " to ",
          dims_to_string(profile->inputs.begin()->second.max));
      resolved.profiles.push_back(std::move(*profile));
    }
  }
  auto built = build_resolved(std::move(graph), model_hash, resolved, report_out);
  if (built && report_out && !default_profile_note.empty())
    report_out->notes.insert(report_out->notes.begin(), default_profile_note);
  return built;
}

namespace {

Expected<std::string> build_resolved(std::unique_ptr<ir::Graph> graph, std::uint64_t model_hash,
                                     const BuilderConfig& config, BuildReport* report_out) {
  const auto start = std::chrono::steady_clock::now();
  BuildReport local_report;
  BuildReport& report = report_out ? *report_out : local_report;
  backends::DeviceBackend* device = backends::device_backend(config.device);
  std::string fingerprint = backends::cpu::cpu_fingerprint();
  if (config.device != DeviceKind::kCpu) {
    // Fails here, before any work, on a machine without a usable GPU.
    VOXRT_ASSIGN_OR_RETURN(fingerprint, device->fingerprint());
  }
  VOXRT_RETURN_IF_ERROR(bind_fixed_inputs(*graph, config));
  VOXRT_RETURN_IF_ERROR(apply_profiles(*graph, config));
  for (auto& w : shadowed_profiles(config.profiles)) report.warnings.push_back(std::move(w));
  VOXRT_RETURN_IF_ERROR(check_states(*graph, config));
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(*graph));

  progress(config, "optimize", 0, 1);
  const std::set<std::string> original_names = builder::node_names(*graph);
  // Every backend runs the Attention op and the silu epilogue (the CUDA side since issue 26's
  // kernels); FusionTarget stays for a backend that does not.
  const builder::FusionTarget fusions;
  VOXRT_RETURN_IF_ERROR(builder::optimize_graph(*graph, report.pass_changes, fusions));
  progress(config, "optimize", 1, 1, str_cat(report.pass_changes.size(), " rewrites"));

  std::vector<std::string> precision_warnings;
  VOXRT_RETURN_IF_ERROR(
      builder::apply_layer_precisions(*graph, config, original_names, precision_warnings));
  for (auto& w : precision_warnings) report.warnings.push_back("warning: " + w);

  std::vector<std::string> warnings;
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> opt_inputs,
                         builder::make_opt_inputs(*graph, config, warnings));
  for (auto& w : warnings) report.warnings.push_back("warning: " + w);
  progress(config, "profile", 0, 1);
  auto profiled = builder::run_profiling(*graph, opt_inputs, config.threads);
  if (!profiled && !warnings.empty()) {
    // The usual cause: a symbolic dim taken as 1 because no profile names its input.
    std::string hint;
    for (const auto& w : warnings) hint += str_cat("\n  note: ", w);
    return Status(profiled.status().code(), str_cat(profiled.status().message(), hint));
  }
  VOXRT_ASSIGN_OR_RETURN(builder::ProfilingRun run, std::move(profiled));
  progress(config, "profile", 1, 1);

  builder::TimingCache cache;
  if (!config.timing_cache_path.empty()) {
    VOXRT_ASSIGN_OR_RETURN(cache, builder::TimingCache::load(config.timing_cache_path));
  }
  // Profile p's opt inputs (p = 0 has them above), for the per-profile tuning rounds.
  const auto opt_inputs_for = [&](std::size_t p) -> Expected<std::vector<Tensor>> {
    BuilderConfig at_p = config;
    std::swap(at_p.profiles[0], at_p.profiles[p]);
    std::vector<std::string> ignored;  // the same notes as profile 0's
    return builder::make_opt_inputs(*graph, at_p, ignored);
  };
  const bool tune_per_profile = config.autotune && config.profiles.size() > 1;
  if (device) {
    // INT8 on the device: calibrated on the CPU as for a CPU engine, among the layers this
    // backend has INT8 kernels for; every other layer of an int8 engine runs at fp16.
    const std::vector<ir::Node*> nodes = graph->nodes();
    const bool any_int8 = std::any_of(nodes.begin(), nodes.end(), [&](const ir::Node* n) {
      return backends::layer_precision(*n, config.precision) == Precision::kInt8;
    });
    if (any_int8) {
      progress(config, "calibrate", 0, 1);
      builder::calibration::Int8Target target;
      target.backend = "CUDA";
      target.has_int8_kernel = [device](const ir::Node& n) { return device->int8_candidate(n); };
      target.fallback = Precision::kFp16;
      target.kernels =
          "MatMul, FusedMatMul and Gemm with constant 2-D weights and group-1 convolutions";
      VOXRT_RETURN_IF_ERROR(
          builder::calibration::calibrate_int8_layers(*graph, model_hash, config, report, target));
      builder::settle_device_int8_layer_precisions(*graph, config.precision, report.notes);
      progress(config, "calibrate", 1, 1);
    }
    // The whole graph runs on the device: every node needs a device kernel.
    const auto unsupported_nodes = device->unsupported_nodes(*graph, config.precision);
    if (!unsupported_nodes.empty()) {
      std::string all;
      for (const auto& m : unsupported_nodes) all += "\n  " + m;
      report.unsupported_nodes = unsupported_nodes;
      return unsupported(unsupported_nodes.size(),
                         " node(s) cannot run on the CUDA backend (no CPU fallback):", all);
    }
    // Times every candidate on the device at `inputs` (profile `profile`'s opt inputs); `shapes`
    // (a CPU profiling run at the same inputs) gives each node's input shapes for the
    // timing-cache keys.
    const auto tune_on_device = [&](const builder::ProfilingRun& shapes,
                                    std::span<const Tensor> inputs, std::size_t profile) -> Status {
      const std::string label =
          profile < config.profiles.size() ? config.profiles[profile].name : std::string();
      progress(config, "autotune", 0, 1, label);
      std::unordered_map<const ir::Node*, const builder::ProfilingRun::Record*> record_of;
      for (const auto& r : shapes.records) record_of.emplace(r.node, &r);
      auto key_for = [&](const ir::Node& node, const backends::TacticInfo& tactic) {
        const std::string key_target = str_cat(
            fingerprint,
            " precision=", precision_name(backends::layer_precision(node, config.precision)));
        std::vector<const Tensor*> ins;
        auto it = record_of.find(&node);
        if (it != record_of.end()) {
          for (const Tensor& t : it->second->inputs) ins.push_back(t.is_valid() ? &t : nullptr);
        }
        return builder::TimingCache::key(node, ins, tactic, key_target, 1);
      };
      backends::TacticTimingStore store;
      store.find = [&](const ir::Node& node, const backends::TacticInfo& tactic) {
        return cache.find(key_for(node, tactic));
      };
      store.put = [&](const ir::Node& node, const backends::TacticInfo& tactic, double us) {
        cache.put(key_for(node, tactic), us);
      };
      backends::TacticSelectionStats stats;
      VOXRT_RETURN_IF_ERROR(device->select_tactics(*graph, inputs, config.precision,
                                                   config.autotune, config.timing_iterations, store,
                                                   stats));
      if (config.autotune && profile == 0) {
        // Graph-level ways (the GRU layers as one call), at the first profile's opt shapes.
        VOXRT_RETURN_IF_ERROR(device->tune_graph(*graph, inputs, config.precision,
                                                 config.timing_iterations, store, stats));
      }
      report.tactics_timed += stats.timed;
      report.timing_cache_hits += stats.cache_hits;
      for (const auto& note : stats.notes) report.warnings.push_back("warning: " + note);
      report.tactic_timings.insert(report.tactic_timings.end(), stats.timings.begin(),
                                   stats.timings.end());
      progress(config, "autotune", 1, 1, label);
      return Status::ok();
    };
    VOXRT_RETURN_IF_ERROR(tune_on_device(run, opt_inputs, 0));
    if (tune_per_profile) {
      VOXRT_RETURN_IF_ERROR(
          builder::select_profile_tactics(*graph, config, report, [&](std::size_t p) -> Status {
            VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, opt_inputs_for(p));
            auto shapes = builder::run_profiling(*graph, inputs, config.threads);
            if (!shapes) {
              return shapes.status().with_context(
                  str_cat("profile '", config.profiles[p].name, "' (number ", p, ")"));
            }
            return tune_on_device(*shapes, inputs, p);
          }));
    }
    builder::record_tuned_device_int8_precisions(*graph, report.notes);
    builder::calibration::report_tuned_int8_layers(*graph, report);
  } else {
    // Calibration has work only where a layer is int8 (by --precision or --layer-precision);
    // an fp32 build does not show the step.
    const std::vector<ir::Node*> nodes = graph->nodes();
    const bool any_int8 = std::any_of(nodes.begin(), nodes.end(), [&](const ir::Node* n) {
      return backends::layer_precision(*n, config.precision) == Precision::kInt8;
    });
    if (any_int8) progress(config, "calibrate", 0, 1);
    VOXRT_RETURN_IF_ERROR(
        builder::calibration::calibrate_int8_layers(*graph, model_hash, config, report));
    if (any_int8) progress(config, "calibrate", 1, 1);
    builder::settle_cpu_layer_precisions(*graph, config.precision, report.notes);
    VOXRT_RETURN_IF_ERROR(builder::select_tactics(*graph, run, config, cache, report));
    if (tune_per_profile) {
      VOXRT_RETURN_IF_ERROR(
          builder::select_profile_tactics(*graph, config, report, [&](std::size_t p) -> Status {
            VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> inputs, opt_inputs_for(p));
            return builder::cpu_tune_at_profile(*graph, config, p, inputs, cache, report);
          }));
    }
    builder::record_tuned_cpu_precisions(*graph, report.notes);
    builder::calibration::report_tuned_int8_layers(*graph, report);
  }
  // The precision pass's "warning: ..." notes are warnings.
  for (auto it = report.notes.begin(); it != report.notes.end();) {
    if (!it->starts_with("warning:")) {
      ++it;
      continue;
    }
    report.warnings.push_back(std::move(*it));
    it = report.notes.erase(it);
  }
  if (!config.timing_cache_path.empty())
    VOXRT_RETURN_IF_ERROR(cache.save(config.timing_cache_path));

  runtime::EngineContents contents;
  contents.target.device = config.device;
  contents.target.precision = config.precision;
  contents.target.fingerprint = fingerprint;
  contents.model_hash = model_hash;
  contents.profiles = config.profiles;
  contents.states = config.states;
  contents.memory_plan = builder::plan_memory(*graph, run);
  for (const auto& [k, v] : config.metadata) graph->metadata[k] = v;
  if (!config.states.empty()) {
    std::string pairs;
    for (const auto& s : config.states)
      pairs += (pairs.empty() ? "" : ",") + s.input + ":" + s.output;
    graph->metadata["voxrt.state_pairs"] = pairs;
  }
  if (config.device == DeviceKind::kCpu && config.autotune) {
    // CPU tactics are timed with this many threads; another count can rank them differently
    // (an engine tuned at 1 thread and run at 2 was 0.68x onnxruntime, tuned at 2 it was 1.49x).
    graph->metadata["voxrt.tuned_threads"] = std::to_string(config.threads);
  }
  contents.graph = std::move(graph);
  progress(config, "serialize", 0, 1);
  VOXRT_ASSIGN_OR_RETURN(std::string bytes, runtime::serialize_engine(contents));
  progress(config, "serialize", 1, 1, str_cat(bytes.size(), " bytes"));
  report.build_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return bytes;
}

}  // namespace

}  // namespace voxrt::builder
