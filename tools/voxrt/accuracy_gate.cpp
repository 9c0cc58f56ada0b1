#include "accuracy_gate.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "engine_accuracy.h"

namespace voxrt::cli {
namespace {

std::string format_sensitivity(const Int8LayerReport& layer) {
  char line[256];
  std::snprintf(line, sizeof(line), "%s (output error %.4g, arg-max changed %.3g %%)",
                layer.node.c_str(), layer.output_error, 100 * layer.argmax_changed);
  return line;
}

}  // namespace

std::string AccuracyGateResult::describe() const {
  std::ostringstream out;
  out.precision(4);
  out << "WER fp32 " << 100 * fp32.wer() << " %, reduced " << 100 * reduced.wer() << " % ("
      << (wer_increase_points() >= 0 ? "+" : "") << wer_increase_points() << " points) on "
      << fp32.files << " files (" << fp32.reference_words << " words)";
  return out.str();
}

Expected<AccuracyGateResult> run_accuracy_gate(const std::string& onnx_path,
                                               const BuilderConfig& config,
                                               const std::string& reduced_engine,
                                               const BuildReport& report,
                                               const AccuracyGateOptions& options) {
  VOXRT_ASSIGN_OR_RETURN(auto entries, stream::read_manifest(options.manifest_path));
  if (entries.empty())
    return invalid_argument("accuracy gate: ", options.manifest_path, " lists no recordings");

  // The FP32 reference: the same build with every layer at fp32.
  BuilderConfig reference = config;
  reference.precision = Precision::kFp32;
  reference.layer_precisions.clear();
  reference.int8 = Int8Config{};
  VOXRT_ASSIGN_OR_RETURN(std::string fp32_engine,
                         build_engine_from_onnx_file(onnx_path, reference, nullptr));

  ScratchDir scratch("accuracy-gate");
  AccuracyGateResult result;
  VOXRT_ASSIGN_OR_RETURN(
      result.fp32,
      engine_word_errors(fp32_engine, scratch.path() / "fp32.engine", entries, options.threads));
  VOXRT_ASSIGN_OR_RETURN(
      result.reduced, engine_word_errors(reduced_engine, scratch.path() / "reduced.engine", entries,
                                         options.threads));
  // (A small tolerance: WERs are ratios of word counts, the limit a decimal.)
  result.passed = result.wer_increase_points() <= options.max_wer_increase_points + 1e-9;

  std::vector<const Int8LayerReport*> quantized;
  for (const auto& layer : report.int8_layers) {
    if (layer.int8) quantized.push_back(&layer);
  }
  std::stable_sort(quantized.begin(), quantized.end(),
                   [](const auto* a, const auto* b) { return a->output_error > b->output_error; });
  double total_error = 0;
  for (const auto* layer : quantized) {
    result.sensitivity.push_back(format_sensitivity(*layer));
    total_error += std::max(layer->output_error, 0.0);
  }
  if (!result.passed) {
    double covered = 0;
    for (const auto* layer : quantized) {
      if (!result.keep_fp32.empty() && covered >= total_error / 2) break;
      result.keep_fp32.push_back(layer->node + ":fp32");
      covered += std::max(layer->output_error, 0.0);
    }
  }
  return result;
}

}  // namespace voxrt::cli
