// NeMo's cache-aware streaming FastConformer-CTC as sherpa-onnx's
// scripts/nemo/fast-conformer-hybrid-transducer-ctc/export-onnx-ctc.py exports it (read by
// sherpa-onnx's online-nemo-ctc-model.cc): model.onnx (the encoder and the CTC decoder in one
// graph, nemo_cache_aware_encoder.h, output logprobs [B, T', vocab + 1] with the blank last) and
// tokens.txt, metadata vocab_size without the blank. The bundle's family is ctc_streaming
// (stream/ctc/ctc_model.h) with the chunk's length input (voxrt.ctc.length_input).
#include <filesystem>

#include "model_import/nemo_cache_aware_bundle.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_tokens.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

bool is_nemo_cache_aware_ctc_dir(const std::string& dir) {
  if (!is_nemo_sherpa_ctc_dir(dir)) return false;
  // The same files as sherpa-onnx's offline NeMo CTC layout: the graph's cache inputs tell.
  auto model_file = find_one_file(dir, "model", ".onnx", "NeMo CTC model");
  return model_file.has_value() && is_nemo_cache_aware_export(*model_file);
}

Expected<ModelDirImportReport> import_nemo_cache_aware_ctc(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-cache-aware-ctc";
  report.family = "ctc_streaming";
  VOXRT_ASSIGN_OR_RETURN(std::string model_file,
                         find_one_file(dir, "model", ".onnx", "NeMo cache-aware CTC model"));
  VOXRT_ASSIGN_OR_RETURN(NemoTokens tokens, read_nemo_tokens(dir));
  const std::string& tokens_file = tokens.file;
  const std::vector<std::string>& pieces = tokens.pieces;
  VOXRT_ASSIGN_OR_RETURN(NemoCacheAwareEncoder model,
                         read_nemo_cache_aware_encoder(model_file, "logprobs", false));
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size,
                         exporter_int(*model.graph, "vocab_size", model_file));
  // NeMo's vocab_size leaves the blank out (sherpa-onnx adds one when it loads the model).
  if (vocab_size + 1 != static_cast<int>(pieces.size())) {
    return invalid_argument(model_file, ": metadata vocab_size ", vocab_size,
                            " (without the blank) but ", tokens_file, " has ", pieces.size(),
                            " tokens; expected vocab_size + 1");
  }
  if (model.output_dim != static_cast<std::int64_t>(pieces.size())) {
    return invalid_argument(model_file, ": logprobs has ", model.output_dim, " classes, but ",
                            tokens_file, " has ", pieces.size(), " tokens with the blank");
  }
  report.notes.push_back(str_cat(model.describe(), ", ", pieces.size(), " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's log-mel without normalisation, its defaults (the layout keeps no "
      "preprocessor settings): 16 kHz, 25/10 ms, n_fft 512, preemph 0.97");
  stream::BundleManifest manifest = nemo_cache_aware_ctc_manifest(model, pieces, "pieces");
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
