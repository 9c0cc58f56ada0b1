#include "builder/layer_precision.h"

#include <optional>

#include "backends/device_backend.h"

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

}  // namespace voxrt::builder
