// NeMo Conformer-CTC / FastConformer-CTC exports (NeMo's Exportable for EncDecCTCModel(BPE) and
// the CTC branch of the hybrid models): inputs audio_signal [B, n_mels, T] float and length [B]
// int64, output logprobs [B, T', vocab + 1] (log-softmax), the blank the LAST class. NeMo's
// front end normalises over the utterance, so the bundle's family is ctc_offline
// (stream/ctc/offline_ctc_model.h) with the front end's settings as voxrt.nemo.* keys.
#include <algorithm>
#include <filesystem>

#include "audio/nemo_features.h"
#include "ir/shape_inference.h"
#include "model_import/icefall_encoder.h"
#include "model_import/nemo_export_config.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_offline_encoder.h"
#include "model_import/nemo_tokens.h"
#include "onnx_import/importer.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kFeaturesInput = kNemoFeaturesInput;
constexpr const char* kLengthInput = kNemoLengthInput;
constexpr const char* kOutput = "logprobs";

struct NemoGraph {
  std::unique_ptr<ir::Graph> graph;
  int n_mels = 0;
  int classes = 0;  // vocabulary + blank
};

// Checks the exporter's names and shapes; errors name the file and what was found.
Expected<NemoGraph> read_nemo_graph(const std::string& file) {
  NemoGraph g;
  VOXRT_ASSIGN_OR_RETURN(g.graph, onnx_import::import_model_file(file));
  ir::Graph& graph = *g.graph;
  for (const ir::Value* input : graph.inputs) {
    if (input->name != kFeaturesInput && input->name != kLengthInput) {
      return invalid_argument(file, ": unexpected input '", input->name,
                              "': a NeMo CTC export takes audio_signal [B, n_mels, T] and length "
                              "[B] (a cache-aware streaming export takes cache_last_channel, "
                              "cache_last_time and cache_last_channel_len too: "
                              "nemo_native_cache_aware.cpp)");
    }
  }
  ir::Value* signal = graph.find_value(kFeaturesInput);
  ir::Value* length = graph.find_value(kLengthInput);
  auto is_input = [&](const ir::Value* v) {
    return v != nullptr &&
           std::find(graph.inputs.begin(), graph.inputs.end(), v) != graph.inputs.end();
  };
  if (!is_input(signal) || !is_input(length)) {
    return invalid_argument(file,
                            ": expected inputs audio_signal and length (NeMo's export names)");
  }
  if (signal->shape.size() != 3 || !signal->shape[1].is_known()) {
    return invalid_argument(file, ": audio_signal must be [B, n_mels, T] with n_mels known, found ",
                            ir::sym_shape_to_string(signal->shape));
  }
  if (length->dtype != DType::kI64 || length->shape.size() != 1) {
    return invalid_argument(file, ": length must be int64 [B], found ",
                            ir::sym_shape_to_string(length->shape));
  }
  g.n_mels = static_cast<int>(signal->shape[1].value);
  ir::Value* out = graph.find_value(kOutput);
  if (out == nullptr || !graph.is_graph_output(out)) {
    std::string found;
    for (const ir::Value* o : graph.outputs) found += (found.empty() ? "" : ", ") + o->name;
    return invalid_argument(file, ": expected an output 'logprobs' (NeMo's CTC export), found ",
                            found);
  }
  VOXRT_RETURN_IF_ERROR(ir::infer_graph(graph).with_context(file));
  if (out->shape.size() != 3 || !out->shape[2].is_known()) {
    return invalid_argument(file, ": logprobs must be [B, T, classes] with classes known, found ",
                            ir::sym_shape_to_string(out->shape));
  }
  g.classes = static_cast<int>(out->shape[2].value);
  // Encoded lengths (a second output of some exports) are not needed: the family computes them.
  graph.outputs = {out};
  return g;
}

Status check_classes(const NemoGraph& g, const std::string& file, std::size_t pieces,
                     const std::string& vocabulary_file) {
  if (static_cast<std::size_t>(g.classes) != pieces) {
    return invalid_argument(file, ": logprobs has ", g.classes, " classes, but ", vocabulary_file,
                            " gives ", pieces, " with the blank (NeMo's blank is the last class, ",
                            "after the tokenizer's pieces)");
  }
  return Status::ok();
}

}  // namespace

// ---- sherpa-onnx's layout --------------------------------------------------------------------

bool is_nemo_sherpa_ctc_dir(const std::string& dir) {
  return has_file(dir, "model", ".onnx") && fs::exists(fs::path(dir) / "tokens.txt") &&
         !fs::exists(fs::path(dir) / "model_config.yaml");
}

Expected<ModelDirImportReport> import_nemo_sherpa_ctc(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-sherpa-onnx-ctc";
  report.family = "ctc_offline";
  VOXRT_ASSIGN_OR_RETURN(std::string model_file,
                         find_one_file(dir, "model", ".onnx", "NeMo CTC model"));
  VOXRT_ASSIGN_OR_RETURN(NemoTokens tokens, read_nemo_tokens(dir));
  const std::string& tokens_file = tokens.file;
  const std::vector<std::string>& pieces = tokens.pieces;
  VOXRT_ASSIGN_OR_RETURN(NemoGraph g, read_nemo_graph(model_file));
  const auto& meta = g.graph->metadata;
  auto normalize = meta.find("normalize_type");
  if (normalize == meta.end()) {
    return invalid_argument(model_file,
                            ": metadata_props has no 'normalize_type' (sherpa-onnx's NeMo export "
                            "scripts write it; was the file exported by one?)");
  }
  VOXRT_ASSIGN_OR_RETURN(const int vocab_size, exporter_int(*g.graph, "vocab_size", model_file));
  VOXRT_ASSIGN_OR_RETURN(const int subsampling,
                         exporter_int(*g.graph, "subsampling_factor", model_file));
  if (vocab_size != static_cast<int>(pieces.size())) {
    return invalid_argument(model_file, ": metadata vocab_size ", vocab_size, " but ", tokens_file,
                            " has ", pieces.size(), " tokens");
  }
  VOXRT_RETURN_IF_ERROR(check_classes(g, model_file, pieces.size(), tokens_file));
  // sherpa-onnx keeps no preprocessor settings: NeMo's Conformer/FastConformer defaults
  // (16 kHz, 25/10 ms hann frames, n_fft 512, pre-emphasis 0.97, Slaney mel, log + 2^-24).
  VOXRT_ASSIGN_OR_RETURN(audio::NemoFeatureConfig front_end,
                         sherpa_nemo_front_end(g.n_mels, normalize->second));
  auto model_type = meta.find("model_type");
  report.notes.push_back(
      str_cat("model_type ", model_type == meta.end() ? "(none)" : model_type->second, ", ",
              g.n_mels, " mel bins, normalize ", audio::nemo_normalize_name(front_end.normalize),
              ", subsampling ", subsampling, ", ", pieces.size(), " tokens (blank last)"));
  report.notes.push_back(
      "front end: NeMo's defaults (the layout keeps no preprocessor settings): 16 kHz, 25/10 ms, "
      "n_fft 512, preemph 0.97");
  stream::BundleManifest manifest;
  manifest.family = "ctc_offline";
  manifest.engines = {{"model", "model.engine"}};
  manifest.metadata = nemo_offline_contract(front_end, subsampling, "ctc_offline", kOutput);
  manifest.metadata["voxrt.vocabulary"] = vocabulary_lines(pieces);
  manifest.metadata["voxrt.unit"] = "pieces";
  manifest.metadata["voxrt.blank_id"] = std::to_string(pieces.size() - 1);
  manifest.source = {{"layout", report.layout},
                     {"model", fs::path(model_file).filename().string()},
                     {"tokens", "tokens.txt"}};
  VOXRT_RETURN_IF_ERROR(build_nemo_offline_encoder(std::move(g.graph), g.n_mels, model_file,
                                                   front_end, "model.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

// ---- NeMo's own export with the .nemo archive's files -----------------------------------------

bool is_nemo_export_ctc_dir(const std::string& dir) {
  return fs::exists(fs::path(dir) / "model_config.yaml") && has_file(dir, "", ".onnx");
}

Expected<ModelDirImportReport> import_nemo_export_ctc(const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-export-ctc";
  report.family = "ctc_offline";
  const std::string config_file = (fs::path(dir) / "model_config.yaml").string();
  VOXRT_ASSIGN_OR_RETURN(auto root, read_yaml_subset_file(config_file));
  // NeMo's own export of a transducer writes encoder-*.onnx and decoder_joint-*.onnx (the
  // prediction and joint networks merged): not this CTC layout. A cache-aware one is recognised
  // before this layout (nemo_native_cache_aware_transducer.cpp); an offline one is not imported.
  const std::string decoder = yaml_text(root->at("decoder._target_"), "");
  if (has_file(dir, "decoder_joint", ".onnx") || decoder.find("RNNT") != std::string::npos) {
    return unsupported(
        dir, ": a NeMo transducer (decoder._target_ '", decoder,
        "') in NeMo's own export layout (encoder-*.onnx, decoder_joint-*.onnx) without "
        "the encoder's cache inputs (an offline model) is not imported yet; export it "
        "with sherpa-onnx's NeMo transducer scripts "
        "(encoder.onnx, decoder.onnx, joiner.onnx, tokens.txt), which voxrt imports");
  }
  VOXRT_ASSIGN_OR_RETURN(std::string model_file, find_one_file(dir, "", ".onnx", "ONNX model"));
  VOXRT_ASSIGN_OR_RETURN(audio::NemoFeatureConfig front_end,
                         nemo_front_end_from_config(*root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoVocabulary vocabulary,
                         nemo_vocabulary_from_config(dir, *root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoGraph g, read_nemo_graph(model_file));
  if (g.n_mels != front_end.n_mels) {
    return invalid_argument(model_file, ": audio_signal has ", g.n_mels, " mel bins but ",
                            config_file, " preprocessor.features is ", front_end.n_mels);
  }
  std::vector<std::string> units = vocabulary.units;
  units.push_back("<blk>");
  VOXRT_RETURN_IF_ERROR(check_classes(g, model_file, units.size(), vocabulary.source));
  const std::string encoder = yaml_text(root->at("encoder._target_"), "");
  const std::string subsampling_type = yaml_text(root->at("encoder.subsampling"), "striding");
  if (subsampling_type != "striding" && subsampling_type != "dw_striding") {
    return unsupported(config_file, ": encoder.subsampling '", subsampling_type,
                       "': voxrt computes output lengths for striding and dw_striding only");
  }
  VOXRT_ASSIGN_OR_RETURN(const double subsampling,
                         yaml_number(root->at("encoder.subsampling_factor"),
                                     "encoder.subsampling_factor", config_file, 4));
  report.notes.push_back(str_cat(
      "encoder ", encoder.empty() ? "(unnamed)" : encoder, ", ", g.n_mels, " mel bins, normalize ",
      audio::nemo_normalize_name(front_end.normalize), ", subsampling ", subsampling, ", ",
      units.size(), " classes from ", vocabulary.source, " (blank last)"));
  const auto dither = yaml_number(root->at("preprocessor.dither"), "dither", config_file, 0);
  if (dither.has_value() && *dither != 0)
    report.notes.push_back("preprocessor.dither is a training setting: off at inference");
  stream::BundleManifest manifest;
  manifest.family = "ctc_offline";
  manifest.engines = {{"model", "model.engine"}};
  manifest.metadata =
      nemo_offline_contract(front_end, static_cast<int>(subsampling), "ctc_offline", kOutput);
  manifest.metadata["voxrt.vocabulary"] = vocabulary_lines(units);
  manifest.metadata["voxrt.unit"] = vocabulary.unit_type;
  if (vocabulary.unit_type == "char") manifest.metadata["voxrt.word_boundary"] = " ";
  manifest.metadata["voxrt.blank_id"] = std::to_string(units.size() - 1);
  manifest.source = {{"layout", report.layout},
                     {"model", fs::path(model_file).filename().string()},
                     {"config", "model_config.yaml"},
                     {"vocabulary", vocabulary.source}};
  VOXRT_RETURN_IF_ERROR(build_nemo_offline_encoder(std::move(g.graph), g.n_mels, model_file,
                                                   front_end, "model.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
