// NeMo's cache-aware streaming FastConformer transducer (RNN-T; the transducer branch of the hybrid
// streaming models) as sherpa-onnx's
// scripts/nemo/fast-conformer-hybrid-transducer-ctc/export-onnx-transducer.py exports it (read by
// sherpa-onnx's online-transducer-nemo-model.cc): encoder.onnx (NeMo's cache-aware encoder,
// nemo_cache_aware_encoder.h, output outputs [B, D, T'], with the CTC script's metadata plus
// pred_rnn_layers and pred_hidden), decoder.onnx and joiner.onnx (NeMo's RNNTDecoder and
// RNNTJoint, nemo_prediction_networks.h) and tokens.txt (<blk> last). The bundle's family is
// transducer_stateful (stream/transducer/stateful_transducer_model.h): the encoder's caches and
// pre-encode cache in the slot pool, the LSTM's state per hypothesis, carried across chunks.
#include <filesystem>

#include "model_import/nemo_cache_aware_bundle.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_prediction_networks.h"
#include "model_import/nemo_tokens.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;

bool is_nemo_cache_aware_transducer_dir(const std::string& dir) {
  if (!is_nemo_transducer_dir(dir)) return false;
  // The same files as sherpa-onnx's offline NeMo transducer layout: the encoder's caches tell.
  auto encoder_file = find_one_file(dir, "encoder", ".onnx", "encoder");
  return encoder_file.has_value() && is_nemo_cache_aware_export(*encoder_file);
}

Expected<ModelDirImportReport> import_nemo_cache_aware_transducer(
    const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-cache-aware-transducer";
  report.family = "transducer_stateful";
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_file,
                         find_one_file(dir, "encoder", ".onnx", "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_file,
                         find_one_file(dir, "decoder", ".onnx", "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_file, find_one_file(dir, "joiner", ".onnx", "joiner"));
  VOXRT_ASSIGN_OR_RETURN(NemoTokens tokens, read_nemo_tokens(dir));
  const std::string& tokens_file = tokens.file;
  const std::vector<std::string>& pieces = tokens.pieces;
  const auto classes = static_cast<std::int64_t>(pieces.size());
  VOXRT_ASSIGN_OR_RETURN(NemoCacheAwareEncoder encoder,
                         read_nemo_cache_aware_encoder(encoder_file, "outputs", true));
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size,
                         exporter_int(*encoder.graph, "vocab_size", encoder_file));
  if (vocab_size + 1 != classes) {
    return invalid_argument(encoder_file, ": metadata vocab_size ", vocab_size,
                            " (NeMo's, without the blank) but ", tokens_file, " has ", classes,
                            " tokens with the blank; expected vocab_size + 1 tokens");
  }
  VOXRT_ASSIGN_OR_RETURN(const int layers,
                         exporter_int(*encoder.graph, "pred_rnn_layers", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int hidden,
                         exporter_int(*encoder.graph, "pred_hidden", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(
      NemoPredictionNetworks networks,
      read_nemo_prediction_networks(decoder_file, joiner_file, layers, hidden, encoder.output_dim,
                                    classes, tokens_file, options));
  if (networks.extra_logits > 0) {
    return unsupported(joiner_file, ": the joiner gives ", classes + networks.extra_logits,
                       " logits, more than tokens.txt's ", classes,
                       " (a TDT model's durations): the streaming transducer family runs RNN-T "
                       "models only");
  }
  stream::BundleManifest manifest =
      nemo_cache_aware_transducer_manifest(encoder, networks.metadata, pieces, "pieces");
  manifest.source = {{"layout", report.layout},
                     {"model_type", encoder.model_type},
                     {"encoder", fs::path(encoder_file).filename().string()},
                     {"decoder", fs::path(decoder_file).filename().string()},
                     {"joiner", fs::path(joiner_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  report.notes.push_back(str_cat(encoder.describe(), ", RNN-T, prediction LSTM ", layers, " x ",
                                 hidden, ", ", classes, " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's log-mel without normalisation, its defaults (the layout keeps no "
      "preprocessor settings): 16 kHz, 25/10 ms, n_fft 512, preemph 0.97");
  const BuilderConfig config = encoder.build_config(options);
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(encoder.graph), encoder_file, config,
                                            options.bundle_dir, "encoder.engine", options));
  VOXRT_RETURN_IF_ERROR(networks.build(options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
