#include "model_import/model_dir_import.h"

#include <filesystem>

#include "model_import/icefall_layouts.h"
#include "model_import/nemo_layouts.h"
#include "model_import/optimum_layouts.h"
#include "model_import/torchaudio_layouts.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

Expected<ModelDirImportReport> import_model_dir(const ModelDirImportOptions& options) {
  std::error_code ec;
  if (!fs::is_directory(options.model_dir, ec))
    return not_found(options.model_dir,
                     ": not a folder (--model-dir takes an exported model's folder)");
  if (options.bundle_dir.empty())
    return invalid_argument("--model-dir needs an output bundle folder");
  if (options.max_batch < 1 || options.max_beam < 1)
    return invalid_argument("--model-dir: max batch and beam must be >= 1");
  fs::create_directories(options.bundle_dir, ec);
  if (ec) return io_error(options.bundle_dir, ": cannot create the bundle folder: ", ec.message());
  // Before icefall's: an optimum folder also holds encoder*.onnx and decoder*.onnx files.
  if (is_optimum_whisper_dir(options.model_dir)) return import_optimum_whisper(options);
  if (is_torchaudio_emformer_dir(options.model_dir)) return import_torchaudio_emformer(options);
  // Before icefall's: the same file names, but NeMo's decoder is an LSTM with (h, c) inputs.
  // Before the offline NeMo transducer: the same files, but the encoder takes NeMo's caches.
  if (is_nemo_cache_aware_transducer_dir(options.model_dir))
    return import_nemo_cache_aware_transducer(options);
  if (is_nemo_transducer_dir(options.model_dir)) return import_nemo_transducer(options);
  if (is_icefall_transducer_dir(options.model_dir)) return import_icefall_transducer(options);
  if (is_icefall_streaming_ctc_dir(options.model_dir)) return import_icefall_streaming_ctc(options);
  // Before the offline NeMo export, which refuses NeMo's own transducer export: model_config.yaml
  // too, but encoder*.onnx with NeMo's caches and decoder_joint*.onnx.
  if (is_nemo_native_cache_aware_transducer_dir(options.model_dir))
    return import_nemo_native_cache_aware_transducer(options);
  // Before the offline NeMo export: the same files, but the graph takes NeMo's caches.
  if (is_nemo_native_cache_aware_ctc_dir(options.model_dir))
    return import_nemo_native_cache_aware_ctc(options);
  if (is_nemo_export_ctc_dir(options.model_dir)) return import_nemo_export_ctc(options);
  // Before the offline layout: the same file names, but the graph takes NeMo's caches.
  if (is_nemo_cache_aware_ctc_dir(options.model_dir)) return import_nemo_cache_aware_ctc(options);
  if (is_nemo_sherpa_ctc_dir(options.model_dir)) return import_nemo_sherpa_ctc(options);
  std::string found;
  for (const auto& entry : fs::directory_iterator(options.model_dir, ec))
    found += (found.empty() ? "" : ", ") + entry.path().filename().string();
  return unsupported(
      options.model_dir,
      ": no layout voxrt imports was recognised; expected an icefall/sherpa-onnx "
      "streaming transducer or sherpa-onnx's NeMo transducer (encoder*.onnx, "
      "decoder*.onnx, joiner*.onnx, tokens.txt), a streaming CTC model (ctc*.onnx, "
      "tokens.txt), a NeMo CTC export (model_config.yaml and *.onnx; or "
      "sherpa-onnx's model.onnx and "
      "tokens.txt), or a Hugging Face optimum Whisper export (encoder_model.onnx, "
      "decoder_model.onnx, decoder_with_past_model.onnx, config.json, "
      "generation_config.json, vocab.json), or a torchaudio Emformer RNN-T (transcriber.onnx, "
      "predictor.onnx, joiner.onnx, global_stats.json, a SentencePiece *.model); "
      "found: ",
      found.empty() ? "(empty)" : found);
}

}  // namespace voxrt::model_import
