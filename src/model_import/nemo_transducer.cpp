// NeMo Conformer/FastConformer transducers (EncDecRNNTBPEModel, Parakeet-TDT) as sherpa-onnx's
// NeMo export scripts leave them (they run NeMo's own exporters for the three modules;
// sherpa-onnx's offline-transducer-nemo-model.cc reads them):
// - encoder*.onnx: audio_signal [N, n_mels, T] f32, length [N] i64 -> outputs [N, D, T'],
//   encoded_lengths; metadata vocab_size (NeMo's decoder.vocab_size: WITHOUT the blank),
//   normalize_type, subsampling_factor, pred_rnn_layers, pred_hidden, model_type, url;
// (decoder and joiner: nemo_prediction_networks.h)
// - decoder*.onnx: targets [N, 1], target_length [N], h and c [pred_rnn_layers, N, pred_hidden]
//   -> output [N, pred_hidden, 1], lengths, h', c' (in that order; NeMo's exported names such as
//   states.1 / onnx::Slice_3 are kept as they are);
// - joiner*.onnx: encoder_outputs [N, D, T], decoder_outputs [N, H, U] -> [N, T, U, classes]:
//   the units with the blank (tokens.txt), then for a TDT model one logit per duration;
// - tokens.txt with <blk> LAST (NeMo's blank id is the vocabulary size).
// The bundle's family is transducer_offline (stream/transducer/offline_transducer_model.h).
#include <filesystem>

#include "ir/shape_inference.h"
#include "model_import/import_support.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_offline_encoder.h"
#include "model_import/nemo_prediction_networks.h"
#include "model_import/nemo_tokens.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kEncoderOutput = "outputs";

std::string names_of(const std::vector<ir::Value*>& values) {
  std::string out;
  for (const ir::Value* v : values) out += (out.empty() ? "" : ", ") + v->name;
  return out;
}

std::string metadata_text(const ir::Graph& graph, const std::string& key) {
  auto it = graph.metadata.find(key);
  return it == graph.metadata.end() ? std::string() : it->second;
}

}  // namespace

bool is_nemo_transducer_dir(const std::string& dir) {
  // (tokens.txt is not part of the test: a NeMo folder without it gets this importer's error.)
  if (!has_file(dir, "encoder", ".onnx") || !has_file(dir, "decoder", ".onnx") ||
      !has_file(dir, "joiner", ".onnx"))
    return false;
  // icefall's stateless decoder takes one input (y); NeMo's LSTM decoder takes the targets,
  // their lengths and its two states. The decoder is small: reading it is cheap.
  auto decoder_file = find_one_file(dir, "decoder", ".onnx", "decoder");
  if (!decoder_file) return false;
  auto decoder = onnx_import::import_model_file(*decoder_file);
  return decoder.has_value() && (*decoder)->inputs.size() == 4;
}

Expected<ModelDirImportReport> import_nemo_transducer(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-transducer";
  report.family = "transducer_offline";
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_file,
                         find_one_file(dir, "encoder", ".onnx", "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_file,
                         find_one_file(dir, "decoder", ".onnx", "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_file, find_one_file(dir, "joiner", ".onnx", "joiner"));
  VOXRT_ASSIGN_OR_RETURN(NemoTokens tokens, read_nemo_tokens(dir));
  const std::string& tokens_file = tokens.file;
  const std::vector<std::string>& pieces = tokens.pieces;
  const auto classes = static_cast<std::int64_t>(pieces.size());

  // ---- encoder ----
  VOXRT_ASSIGN_OR_RETURN(auto encoder, onnx_import::import_model_file(encoder_file));
  for (const ir::Value* input : encoder->inputs) {
    if (input->name != kNemoFeaturesInput && input->name != kNemoLengthInput) {
      return invalid_argument(encoder_file, ": unexpected input '", input->name,
                              "': a NeMo transducer encoder takes audio_signal [N, n_mels, T] and "
                              "length [N] (a cache-aware encoder, with cache inputs, is imported "
                              "by nemo_cache_aware_transducer.cpp)");
    }
  }
  ir::Value* signal = encoder->find_value(kNemoFeaturesInput);
  ir::Value* length = encoder->find_value(kNemoLengthInput);
  if (encoder->inputs.size() != 2 || signal == nullptr || length == nullptr ||
      signal->shape.size() != 3 || !signal->shape[1].is_known() || length->dtype != DType::kI64) {
    return invalid_argument(encoder_file,
                            ": expected inputs audio_signal [N, n_mels, T] f32 "
                            "(n_mels known) and length [N] int64; found ",
                            names_of(encoder->inputs));
  }
  const int n_mels = static_cast<int>(signal->shape[1].value);
  ir::Value* encoded = encoder->find_value(kEncoderOutput);
  if (encoded == nullptr || !encoder->is_graph_output(encoded)) {
    return invalid_argument(encoder_file, ": expected an output 'outputs' [N, D, T'] (NeMo's ",
                            "encoder export), found ", names_of(encoder->outputs));
  }
  if (!encoder->metadata.count("normalize_type")) {
    return invalid_argument(encoder_file,
                            ": metadata_props has no 'normalize_type' (sherpa-onnx's "
                            "NeMo export scripts write it; was the file exported by one?)");
  }
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size, exporter_int(*encoder, "vocab_size", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int subsampling,
                         exporter_int(*encoder, "subsampling_factor", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int layers, exporter_int(*encoder, "pred_rnn_layers", encoder_file));
  VOXRT_ASSIGN_OR_RETURN(const int hidden, exporter_int(*encoder, "pred_hidden", encoder_file));
  if (vocab_size + 1 != classes) {
    return invalid_argument(encoder_file, ": metadata vocab_size ", vocab_size,
                            " (NeMo's, without the blank) but ", tokens_file, " has ", classes,
                            " tokens with the blank; expected vocab_size + 1 tokens");
  }
  const std::string normalize = metadata_text(*encoder, "normalize_type");
  VOXRT_ASSIGN_OR_RETURN(audio::NemoFeatureConfig front_end,
                         sherpa_nemo_front_end(n_mels, normalize.empty() ? "NA" : normalize));
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(*encoder).with_context(encoder_file));
  if (encoded->shape.size() != 3 || !encoded->shape[1].is_known()) {
    return invalid_argument(encoder_file, ": outputs must be [N, D, T'] with D known, found ",
                            ir::sym_shape_to_string(encoded->shape));
  }
  const std::int64_t encoder_dim = encoded->shape[1].value;
  // Encoded lengths are not needed: the family computes them with NeMo's rule.
  encoder->outputs = {encoded};

  VOXRT_ASSIGN_OR_RETURN(NemoPredictionNetworks networks,
                         read_nemo_prediction_networks(decoder_file, joiner_file, layers, hidden,
                                                       encoder_dim, classes, tokens_file, options));
  // TDT: one logit per duration after the units (read_nemo_prediction_networks).
  const std::int64_t extra = networks.extra_logits;
  const std::string& durations = networks.durations;
  const std::string url = metadata_text(*encoder, "url");
  const bool url_says_tdt = url.find("tdt") != std::string::npos;
  if (url_says_tdt && extra == 0) {
    return invalid_argument(encoder_file, ": metadata url '", url, "' names a TDT model, but ",
                            joiner_file, " gives ", classes + extra, " logits, no more than the ",
                            classes, " tokens (no duration logits)");
  }

  // ---- the bundle ----
  stream::BundleManifest manifest;
  manifest.family = "transducer_offline";
  manifest.engines = {
      {"encoder", "encoder.engine"}, {"decoder", "decoder.engine"}, {"joiner", "joiner.engine"}};
  manifest.metadata =
      nemo_offline_contract(front_end, subsampling, "transducer_offline", kEncoderOutput);
  manifest.metadata["voxrt.vocabulary"] = vocabulary_lines(pieces);
  manifest.metadata["voxrt.unit"] = "pieces";
  manifest.metadata["voxrt.blank_id"] = std::to_string(classes - 1);
  for (const auto& [key, value] : networks.metadata) manifest.metadata[key] = value;
  manifest.source = {{"layout", report.layout},
                     {"encoder", fs::path(encoder_file).filename().string()},
                     {"decoder", fs::path(decoder_file).filename().string()},
                     {"joiner", fs::path(joiner_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  report.notes.push_back(
      str_cat("model_type ",
              metadata_text(*encoder, "model_type").empty() ? "(none)"
                                                            : metadata_text(*encoder, "model_type"),
              ", ", extra > 0 ? "TDT (durations " + durations + ")" : std::string("RNN-T"), ", ",
              n_mels, " mel bins, normalize ", audio::nemo_normalize_name(front_end.normalize),
              ", subsampling ", subsampling, ", prediction LSTM ", layers, " x ", hidden, ", ",
              classes, " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's defaults (the layout keeps no preprocessor settings): 16 kHz, 25/10 ms, "
      "n_fft 512, preemph 0.97");
  VOXRT_RETURN_IF_ERROR(build_nemo_offline_encoder(std::move(encoder), n_mels, encoder_file,
                                                   front_end, "encoder.engine", options));
  VOXRT_RETURN_IF_ERROR(networks.build(options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
