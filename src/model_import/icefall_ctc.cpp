// icefall's streaming CTC exports as sherpa-onnx reads them (icefall's
// zipformer/export-onnx-streaming-ctc.py; sherpa-onnx's online-zipformer2-ctc-model.cc): one
// ctc*.onnx (e.g. ctc-epoch-99-avg-1-chunk-16-left-128.onnx) and tokens.txt. The model is a
// streaming encoder (icefall_encoder.h) whose output is log_probs [N, T', vocab] (log-softmax).
#include <filesystem>

#include "model_import/icefall_encoder.h"
#include "model_import/icefall_layouts.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

bool is_icefall_streaming_ctc_dir(const std::string& dir) {
  return has_file(dir, "ctc", ".onnx") && fs::exists(fs::path(dir) / "tokens.txt");
}

Expected<ModelDirImportReport> import_icefall_streaming_ctc(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "icefall-streaming-ctc";
  report.family = "ctc_streaming";
  VOXRT_ASSIGN_OR_RETURN(std::string model_file, find_one_file(dir, "ctc", ".onnx", "CTC model"));
  const std::string tokens_file = (fs::path(dir) / "tokens.txt").string();
  VOXRT_ASSIGN_OR_RETURN(std::vector<std::string> pieces, read_tokens_txt(tokens_file));
  VOXRT_ASSIGN_OR_RETURN(IcefallStreamingEncoder model,
                         read_icefall_streaming_encoder(model_file, "log_probs"));
  if (!model.processed_input.empty()) {
    return unsupported(model_file, ": input '", model.processed_input,
                       "' without an output: voxrt's streaming CTC models take the features and "
                       "caches only");
  }
  ir::Value* log_probs = model.graph->find_value("log_probs");
  if (log_probs->shape.size() != 3 || !log_probs->shape[2].is_known() ||
      log_probs->shape[2].value != static_cast<std::int64_t>(pieces.size())) {
    return invalid_argument(model_file, ": log_probs is ",
                            ir::sym_shape_to_string(log_probs->shape), ", expected [N, T, ",
                            pieces.size(), "] (", tokens_file, " has ", pieces.size(), " tokens)");
  }
  report.notes = model.notes;
  report.notes.push_back(str_cat(
      "model_type ", model.model_type.empty() ? "(none)" : model.model_type, ", ",
      model.states.size(), " caches, T ", model.chunk_frames, ", decode_chunk_len ",
      model.shift_frames, ", subsampling ", model.subsampling, ", ", pieces.size(), " tokens"));
  stream::BundleManifest manifest;
  manifest.family = "ctc_streaming";
  manifest.engines = {{"model", "model.engine"}};
  manifest.metadata = streaming_contract(model.num_bins, pieces, model.chunk_frames,
                                         model.shift_frames, model.subsampling);
  manifest.metadata["voxrt.model_family"] = "ctc_streaming";
  manifest.source = {{"layout", report.layout},
                     {"model_type", model.model_type},
                     {"model", fs::path(model_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  const BuilderConfig config = model.build_config(options);
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(model.graph), model_file, config,
                                            options.bundle_dir, "model.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
