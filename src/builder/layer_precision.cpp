#include "builder/layer_precision.h"

#include <algorithm>
#include <optional>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cpu/quantized/quantized_kernels.h"
#include "backends/layer_precision.h"
#include "ir/graph_walk.h"
#include "runtime/engine_format.h"

namespace voxrt::builder {
namespace {

// fp32 keeps the most, then tf32's 10-bit mantissa products, then fp16 and bf16.
int exactness(Precision p) {
  switch (p) {
    case Precision::kFp32: return 3;
    case Precision::kTf32: return 2;
    case Precision::kFp16:
    case Precision::kBf16: return 1;
    default: return 0;
  }
}

void collect_names(const ir::Graph& graph, std::set<std::string>& names) {
  for (const ir::Node* node : graph.nodes()) {
    names.insert(node->name);
    for (const auto& o : node->origin) names.insert(o);
    for (const auto& [key, value] : node->attrs.all()) {
      if (const auto* sub = std::get_if<std::shared_ptr<ir::Graph>>(&value); sub && *sub)
        collect_names(**sub, names);
    }
  }
}

}  // namespace

std::set<std::string> node_names(const ir::Graph& graph) {
  std::set<std::string> names;
  collect_names(graph, names);
  return names;
}

Status apply_layer_precisions(ir::Graph& graph, const BuilderConfig& config,
                              const std::set<std::string>& original_names,
                              std::vector<std::string>& warnings) {
  if (config.layer_precisions.empty()) return Status::ok();
  std::string unknown;
  for (const auto& [name, precision] : config.layer_precisions) {
    if (!original_names.count(name)) unknown += str_cat(unknown.empty() ? "'" : ", '", name, "'");
  }
  if (!unknown.empty()) {
    std::string some;
    int listed = 0;
    for (const auto& n : original_names) {
      if (listed++ == 8) {
        some += ", ...";
        break;
      }
      some += str_cat(listed > 1 ? ", " : "", n);
    }
    return invalid_argument("layer precision: the model has no node named ", unknown,
                            " (ONNX node names, e.g. ", some, ")");
  }
  std::set<std::string> applied;
  for (ir::Node* node : graph.nodes()) {
    std::optional<Precision> chosen;
    const auto consider = [&](const std::string& name) {
      auto it = config.layer_precisions.find(name);
      if (it == config.layer_precisions.end()) return;
      applied.insert(name);
      if (!chosen || exactness(it->second) > exactness(*chosen)) chosen = it->second;
    };
    consider(node->name);
    for (const auto& o : node->origin) consider(o);
    if (chosen) node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(*chosen));
  }
  for (const auto& [name, precision] : config.layer_precisions) {
    if (!applied.count(name)) {
      warnings.push_back(str_cat("layer precision: node '", name, "' was folded away at build ",
                                 "time (its result is a constant), so ", precision_name(precision),
                                 " does not apply to it"));
    }
  }
  return Status::ok();
}

void record_tuned_cpu_precisions(ir::Graph& graph, std::vector<std::string>& notes) {
  for (ir::Node* node : ir::nodes_with_branches(graph)) {
    const Precision marked = backends::layer_precision(*node, Precision::kFp32);
    if (marked != Precision::kFp16 && marked != Precision::kInt8) continue;
    const std::string suffix = marked == Precision::kFp16 ? "_fp16" : "_int8";
    std::vector<std::string> chosen = node->attrs.get_strings(runtime::kProfileTacticNamesAttr);
    chosen.push_back(node->attrs.get_string(runtime::kTacticNameAttr, ""));
    const bool any_reduced =
        std::any_of(chosen.begin(), chosen.end(),
                    [&](const std::string& name) { return name.ends_with(suffix); });
    if (any_reduced) continue;
    node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kFp32));
    for (const char* attr :
         {backends::cpu::quantized::kInputScaleAttr, backends::cpu::quantized::kInputZeroPointAttr,
          backends::cpu::quantized::kInputRangeAttr})
      node->attrs.erase(attr);
    notes.push_back(str_cat("layer '", node->name, "' runs in fp32: its FP32 kernel (",
                            chosen.back(), ") was faster than the ", precision_name(marked),
                            " ones at every profile"));
  }
}

void settle_device_int8_layer_precisions(ir::Graph& graph, Precision engine_precision,
                                         std::vector<std::string>& notes) {
  int int8_layers = 0, fp16_layers = 0;
  for (ir::Node* node : graph.nodes()) {
    if (backends::layer_precision(*node, engine_precision) != Precision::kInt8) continue;
    if (backends::cpu::quantized::marked_int8(*node)) {
      ++int8_layers;
      continue;
    }
    node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kFp16));
    ++fp16_layers;
  }
  notes.push_back(str_cat("device precision: ", int8_layers, " layer(s) at int8, ", fp16_layers,
                          " node(s) at fp16 (no INT8 kernel, or kept out of INT8)"));
}

void record_tuned_device_int8_precisions(ir::Graph& graph, std::vector<std::string>& notes) {
  for (ir::Node* node : graph.nodes()) {
    if (!backends::cpu::quantized::marked_int8(*node)) continue;
    std::vector<std::string> chosen = node->attrs.get_strings(runtime::kProfileTacticNamesAttr);
    chosen.push_back(node->attrs.get_string(runtime::kTacticNameAttr, ""));
    if (std::any_of(chosen.begin(), chosen.end(),
                    [](const std::string& name) { return name.ends_with("_int8"); }))
      continue;
    node->attrs.set(backends::kLayerPrecisionAttr, static_cast<std::int64_t>(Precision::kFp16));
    for (const char* attr :
         {backends::cpu::quantized::kInputScaleAttr, backends::cpu::quantized::kInputZeroPointAttr,
          backends::cpu::quantized::kInputRangeAttr})
      node->attrs.erase(attr);
    notes.push_back(str_cat("layer '", node->name, "' runs in fp16: its fp16 tactic (",
                            chosen.back(), ") was faster than the int8 ones at every profile"));
  }
}

void settle_cpu_layer_precisions(ir::Graph& graph, Precision engine_precision,
                                 std::vector<std::string>& notes) {
  int fp16_layers = 0, fp32_layers = 0, int8_layers = 0;
  // Nodes of If branches run on the CPU too.
  for (ir::Node* node : ir::nodes_with_branches(graph)) {
    const Precision asked = backends::layer_precision(*node, engine_precision);
    // Calibrated and marked by the INT8 step (builder/calibration/int8_calibration.h).
    if (asked == Precision::kInt8 && backends::cpu::quantized::marked_int8(*node)) {
      ++int8_layers;
      continue;
    }
    const bool explicit_fp16 =
        asked == Precision::kFp16 && node->attrs.has(backends::kLayerPrecisionAttr);
    if (asked == Precision::kFp32 && engine_precision == Precision::kFp32) continue;
    const bool fp16 = asked == Precision::kFp16 && backends::cpu::supports_fp16(*node);
    if (explicit_fp16 && !fp16) {
      notes.push_back(str_cat("warning: layer '", node->name, "' (", ir::op_name(node->op),
                              ") was asked for fp16; the CPU backend has fp16 kernels only for ",
                              "GRU, LSTM and RNN, so it runs in fp32"));
    }
    node->attrs.set(backends::kLayerPrecisionAttr,
                    static_cast<std::int64_t>(fp16 ? Precision::kFp16 : Precision::kFp32));
    ++(fp16 ? fp16_layers : fp32_layers);
  }
  if (fp16_layers + fp32_layers + int8_layers > 0) {
    notes.push_back(str_cat(
        "cpu precision: ", int8_layers > 0 ? str_cat(int8_layers, " layer(s) at int8, ") : "",
        fp16_layers,
        " layer(s) at fp16 (recurrent weights stored in FP16, FP32 "
        "arithmetic), ",
        fp32_layers, " at fp32"));
  }
}

}  // namespace voxrt::builder
