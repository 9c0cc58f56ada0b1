#include "precision_bisect.h"

#include <algorithm>
#include <cstdio>

#include "engine_accuracy.h"

namespace voxrt::cli {
namespace {

std::string points(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%+.2f", value);
  return text;
}

// Builds and decodes engines of one model; every probe shares the scratch folder and the
// calibration (the first INT8 build writes the cache, the others read it).
class Prober {
 public:
  Prober(const std::string& onnx_path, const BuilderConfig& config,
         const PrecisionBisectOptions& options, const std::vector<stream::ManifestEntry>& entries)
      : onnx_path_(onnx_path), config_(config), options_(options), entries_(entries) {
    if (config_.int8.cache_path.empty())
      config_.int8.cache_path = (scratch_.path() / "int8.calib").string();
  }

  void step(const std::string& line) const {
    if (options_.on_step) options_.on_step(line);
  }

  Expected<stream::ManifestScore> fp32() {
    BuilderConfig reference = config_;
    reference.precision = Precision::kFp32;
    reference.layer_precisions.clear();
    reference.int8 = Int8Config{};
    step("fp32 reference: building");
    VOXRT_ASSIGN_OR_RETURN(std::string engine,
                           build_engine_from_onnx_file(onnx_path_, reference, nullptr));
    step("fp32 reference: decoding " + std::to_string(entries_.size()) + " files");
    return engine_word_errors(engine, scratch_.path() / "probe.engine", entries_, options_.threads);
  }

  // The engine that keeps `fp32_layers` (of the quantized ones) in FP32, and its words.
  Expected<PrecisionProbe> probe(const std::string& label,
                                 const std::vector<std::string>& fp32_layers, int quantized,
                                 const stream::ManifestScore& reference,
                                 BuildReport* report = nullptr, std::string* engine_out = nullptr) {
    BuilderConfig config = config_;
    for (const auto& layer : fp32_layers) config.layer_precisions[layer] = Precision::kFp32;
    PrecisionProbe result;
    result.label = label;
    result.fp32_layers = fp32_layers;
    result.int8_layer_count = quantized - static_cast<int>(fp32_layers.size());
    const std::string prefix = "probe " + std::to_string(++probes_) + " (" + label + ")";
    step(prefix + ": building");
    VOXRT_ASSIGN_OR_RETURN(std::string engine,
                           build_engine_from_onnx_file(onnx_path_, config, report));
    step(prefix + ": decoding " + std::to_string(entries_.size()) + " files");
    VOXRT_ASSIGN_OR_RETURN(
        result.score,
        engine_word_errors(engine, scratch_.path() / "probe.engine", entries_, options_.threads));
    result.wer_increase_points = 100 * (result.score.wer() - reference.wer());
    // (A small tolerance: WERs are ratios of word counts, the limit a decimal.)
    result.passed = result.wer_increase_points <= options_.max_wer_increase_points + 1e-9;
    char wer[32];
    std::snprintf(wer, sizeof(wer), "%.2f", 100 * result.score.wer());
    step(prefix + ": WER " + wer + " %, " + points(result.wer_increase_points) + " points");
    if (engine_out) *engine_out = std::move(engine);
    return result;
  }

 private:
  std::string onnx_path_;
  BuilderConfig config_;
  const PrecisionBisectOptions& options_;
  const std::vector<stream::ManifestEntry>& entries_;
  ScratchDir scratch_{"debug-precision"};
  int probes_ = 0;
};

std::vector<std::string> most_sensitive(const std::vector<Int8LayerReport>& layers, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back(layers[i].node);
  return names;
}

}  // namespace

Expected<PrecisionBisectResult> bisect_precision(const std::string& onnx_path,
                                                 const BuilderConfig& config,
                                                 const PrecisionBisectOptions& options) {
  if (config.precision != Precision::kInt8)
    return invalid_argument("debug precision: expected --precision int8, found ",
                            precision_name(config.precision));
  VOXRT_ASSIGN_OR_RETURN(auto entries, stream::read_manifest(options.manifest_path));
  if (entries.empty())
    return invalid_argument("debug precision: ", options.manifest_path, " lists no recordings");

  Prober prober(onnx_path, config, options, entries);
  PrecisionBisectResult result;
  VOXRT_ASSIGN_OR_RETURN(result.fp32, prober.fp32());

  // The all-INT8 engine says which layers are quantized and how sensitive each is alone.
  BuildReport report;
  std::string engine;
  VOXRT_ASSIGN_OR_RETURN(PrecisionProbe all_int8,
                         prober.probe("all int8", {}, 0, result.fp32, &report, &engine));
  for (const auto& layer : report.int8_layers) {
    if (layer.int8) result.layers.push_back(layer);
  }
  std::stable_sort(result.layers.begin(), result.layers.end(),
                   [](const auto& a, const auto& b) { return a.output_error > b.output_error; });
  const int quantized = static_cast<int>(result.layers.size());
  if (quantized == 0)
    return invalid_argument("debug precision: the INT8 build quantized no layer of ", onnx_path,
                            " (build it with -v to see why)");
  all_int8.int8_layer_count = quantized;
  result.probes.push_back(all_int8);
  result.chosen = all_int8;
  result.chosen_engine = std::move(engine);

  if (!all_int8.passed) {
    // Binary search for the fewest most-sensitive layers to keep: `low` fails, `high` passes
    // (all of them in FP32 is the FP32 engine, which passes by definition, unmeasured).
    int low = 0, high = quantized;
    std::optional<PrecisionProbe> at_high;
    std::string high_engine;
    while (high - low > 1) {
      const int middle = (low + high) / 2;
      VOXRT_ASSIGN_OR_RETURN(PrecisionProbe probe,
                             prober.probe("keep " + std::to_string(middle) + " most sensitive",
                                          most_sensitive(result.layers, middle), quantized,
                                          result.fp32, nullptr, &engine));
      result.probes.push_back(probe);
      if (probe.passed) {
        high = middle;
        at_high = probe;
        high_engine = std::move(engine);
      } else {
        low = middle;
      }
    }
    if (!at_high) {
      VOXRT_ASSIGN_OR_RETURN(PrecisionProbe probe,
                             prober.probe("keep all " + std::to_string(quantized),
                                          most_sensitive(result.layers, quantized), quantized,
                                          result.fp32, nullptr, &high_engine));
      result.probes.push_back(probe);
      at_high = probe;
    }
    // Thinning: the ordering by output error is a guess; give each kept layer back to INT8
    // (least sensitive first) and keep the change when the limit still holds. A layer that had
    // to stay while others were still kept may be given back once they are gone (the default
    // model version 2: a layer kept beside 16 others was not needed beside the final 3), so
    // passes repeat until one changes nothing: then every kept layer was tried with exactly the
    // others kept, and the set is 1-minimal.
    PrecisionProbe best = *at_high;
    std::string best_engine = std::move(high_engine);
    std::vector<std::string> keep = best.fp32_layers;
    for (bool changed = true; changed && keep.size() > 1;) {
      changed = false;
      for (int i = static_cast<int>(keep.size()) - 1; i >= 0 && keep.size() > 1; --i) {
        std::vector<std::string> fewer = keep;
        fewer.erase(fewer.begin() + i);
        VOXRT_ASSIGN_OR_RETURN(
            PrecisionProbe probe,
            prober.probe("without " + keep[i], fewer, quantized, result.fp32, nullptr, &engine));
        result.probes.push_back(probe);
        if (probe.passed) {
          keep = fewer;
          best = probe;
          best_engine = std::move(engine);
          changed = true;
        }
      }
    }
    result.keep_fp32 = keep;
    result.chosen = best;
    result.chosen_engine = std::move(best_engine);
  }

  if (options.each_layer) {
    for (const auto& layer : result.layers) {
      std::vector<std::string> others;
      for (const auto& other : result.layers) {
        if (other.node != layer.node) others.push_back(other.node);
      }
      VOXRT_ASSIGN_OR_RETURN(PrecisionProbe probe, prober.probe("only " + layer.node + " int8",
                                                                others, quantized, result.fp32));
      result.each_layer.push_back(probe);
    }
  }
  return result;
}

}  // namespace voxrt::cli
