// NeMo's cache-aware streaming FastConformer transducer (RNN-T) in NeMo's OWN export layout: what
// `model.set_export_config({"cache_support": "True"}); model.export("model.onnx")` writes for an
// EncDecRNNTBPEModel (or a hybrid model's transducer branch): encoder-model.onnx (the encoder's
// forward_for_export, as in sherpa-onnx's layout but without metadata_props) and
// decoder_joint-model.onnx (RNNTDecoderJoint: the prediction and joint networks in one graph),
// next to the unpacked .nemo archive (model_config.yaml, the tokenizer). The streaming sizes come
// from the config's encoder section (nemo_streaming_config.h), the prediction network's sizes
// from decoder.prednet (checked against the graph's state inputs), the units from the tokenizer
// (nemo_export_config.h); the encoder is read and rewritten by nemo_cache_aware_encoder.h and the
// decoder_joint graph split into the family's decoder and joiner by nemo_decoder_joint.h. The
// bundle's family is transducer_stateful, as for sherpa-onnx's layout.
#include <filesystem>

#include "model_import/nemo_cache_aware_bundle.h"
#include "model_import/nemo_decoder_joint.h"
#include "model_import/nemo_export_config.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_prediction_networks.h"
#include "model_import/nemo_streaming_config.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kConfigFile = "model_config.yaml";

Expected<int> prednet_int(const YamlNode& root, const std::string& key, const std::string& file) {
  const YamlNode* node = root.at("decoder.prednet." + key);
  if (node == nullptr || node->is_null()) {
    return invalid_argument(file, ": expected decoder.prednet.", key,
                            " (NeMo's RNNTDecoder), found none");
  }
  VOXRT_ASSIGN_OR_RETURN(const double v, yaml_number(node, "decoder.prednet." + key, file, 0));
  return static_cast<int>(v);
}

}  // namespace

bool is_nemo_native_cache_aware_transducer_dir(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / kConfigFile) || !has_file(dir, "decoder_joint", ".onnx"))
    return false;
  auto encoder_file = find_one_file(dir, "encoder", ".onnx", "encoder");
  return encoder_file.has_value() && is_nemo_cache_aware_export(*encoder_file);
}

Expected<ModelDirImportReport> import_nemo_native_cache_aware_transducer(
    const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-export-cache-aware-transducer";
  report.family = "transducer_stateful";
  const std::string config_file = (fs::path(dir) / kConfigFile).string();
  VOXRT_ASSIGN_OR_RETURN(auto root, read_yaml_subset_file(config_file));
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_file,
                         find_one_file(dir, "encoder", ".onnx", "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_joint_file,
                         find_one_file(dir, "decoder_joint", ".onnx", "decoder_joint"));
  VOXRT_ASSIGN_OR_RETURN(const NemoCacheAwareSizes sizes,
                         nemo_cache_aware_sizes_from_config(*root, config_file));
  VOXRT_ASSIGN_OR_RETURN(const audio::NemoFeatureConfig front_end,
                         nemo_front_end_from_config(*root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoVocabulary vocabulary,
                         nemo_vocabulary_from_config(dir, *root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoCacheAwareEncoder encoder,
                         read_nemo_cache_aware_encoder(encoder_file, "outputs", true, &sizes));
  VOXRT_RETURN_IF_ERROR(
      check_nemo_streaming_front_end(front_end, encoder.n_mels, config_file, encoder_file));
  std::vector<std::string> units = vocabulary.units;
  units.push_back("<blk>");
  const auto classes = static_cast<std::int64_t>(units.size());
  VOXRT_ASSIGN_OR_RETURN(const int layers, prednet_int(*root, "pred_rnn_layers", config_file));
  VOXRT_ASSIGN_OR_RETURN(const int hidden, prednet_int(*root, "pred_hidden", config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoDecoderJointSplit split, split_nemo_decoder_joint(decoder_joint_file));
  VOXRT_ASSIGN_OR_RETURN(NemoPredictionNetworks networks,
                         read_nemo_prediction_networks(std::move(split.decoder), decoder_joint_file,
                                                       std::move(split.joiner), decoder_joint_file,
                                                       true, layers, hidden, encoder.output_dim,
                                                       classes, vocabulary.source, options));
  if (networks.extra_logits > 0) {
    return unsupported(decoder_joint_file, ": the joint gives ", classes + networks.extra_logits,
                       " logits, more than the ", classes,
                       " units with the blank (a TDT model's durations): the streaming "
                       "transducer family runs RNN-T models only");
  }
  encoder.model_type = yaml_text(root->get("target"), "");
  stream::BundleManifest manifest =
      nemo_cache_aware_transducer_manifest(encoder, networks.metadata, units, vocabulary.unit_type);
  manifest.source = {{"layout", report.layout},
                     {"model_type", encoder.model_type},
                     {"encoder", fs::path(encoder_file).filename().string()},
                     {"decoder_joint", fs::path(decoder_joint_file).filename().string()},
                     {"config", kConfigFile},
                     {"vocabulary", vocabulary.source}};
  report.notes.push_back(str_cat(encoder.describe(), " (from ", kConfigFile,
                                 "), RNN-T, prediction LSTM ", layers, " x ", hidden, ", ", classes,
                                 " classes from ", vocabulary.source, " (blank last)"));
  report.notes.push_back(
      str_cat("decoder_joint split at '", split.crossing, "' (", split.width, " values per row)"));
  const BuilderConfig config = encoder.build_config(options);
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(encoder.graph), encoder_file, config,
                                            options.bundle_dir, "encoder.engine", options));
  VOXRT_RETURN_IF_ERROR(networks.build(options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
