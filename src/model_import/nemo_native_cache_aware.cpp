// NeMo's cache-aware streaming FastConformer-CTC in NeMo's OWN export layout: what
// `model.set_export_config({"cache_support": "True"}); model.export("model.onnx")` writes, next to
// the unpacked .nemo archive (model_config.yaml, <hash>_tokenizer.vocab ...). The graph is the
// one sherpa-onnx's script exports (ExportableEncDecModel.forward_for_export: inputs
// audio_signal, length and the three batch-first caches; outputs logprobs, encoded_lengths and
// the caches' *_next), but without metadata_props: the streaming sizes come from the config's
// encoder section (nemo_streaming_config.h), the front end from its preprocessor section and the
// units from its tokenizer (nemo_export_config.h). The graph is then read and rewritten by
// nemo_cache_aware_encoder.h exactly as for sherpa-onnx's layout, so both layouts of one model
// build the same ctc_streaming bundle.
#include <filesystem>

#include "model_import/nemo_cache_aware_bundle.h"
#include "model_import/nemo_export_config.h"
#include "model_import/nemo_layouts.h"
#include "model_import/nemo_streaming_config.h"

namespace voxrt::model_import {
namespace fs = std::filesystem;
namespace {

constexpr const char* kConfigFile = "model_config.yaml";

}  // namespace

bool is_nemo_native_cache_aware_ctc_dir(const std::string& dir) {
  if (!fs::exists(fs::path(dir) / kConfigFile) || has_file(dir, "decoder_joint", ".onnx"))
    return false;
  auto model_file = find_one_file(dir, "", ".onnx", "ONNX model");
  return model_file.has_value() && is_nemo_cache_aware_export(*model_file);
}

Expected<ModelDirImportReport> import_nemo_native_cache_aware_ctc(
    const ModelDirImportOptions& options) {
  const std::string& dir = options.model_dir;
  ModelDirImportReport report;
  report.layout = "nemo-export-cache-aware-ctc";
  report.family = "ctc_streaming";
  const std::string config_file = (fs::path(dir) / kConfigFile).string();
  VOXRT_ASSIGN_OR_RETURN(auto root, read_yaml_subset_file(config_file));
  VOXRT_ASSIGN_OR_RETURN(std::string model_file, find_one_file(dir, "", ".onnx", "ONNX model"));
  VOXRT_ASSIGN_OR_RETURN(const NemoCacheAwareSizes sizes,
                         nemo_cache_aware_sizes_from_config(*root, config_file));
  VOXRT_ASSIGN_OR_RETURN(const audio::NemoFeatureConfig front_end,
                         nemo_front_end_from_config(*root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoVocabulary vocabulary,
                         nemo_vocabulary_from_config(dir, *root, config_file));
  VOXRT_ASSIGN_OR_RETURN(NemoCacheAwareEncoder model,
                         read_nemo_cache_aware_encoder(model_file, "logprobs", false, &sizes));
  VOXRT_RETURN_IF_ERROR(
      check_nemo_streaming_front_end(front_end, model.n_mels, config_file, model_file));
  std::vector<std::string> units = vocabulary.units;
  units.push_back("<blk>");
  if (model.output_dim != static_cast<std::int64_t>(units.size())) {
    return invalid_argument(model_file, ": logprobs has ", model.output_dim, " classes, but ",
                            vocabulary.source, " gives ", units.size(),
                            " with the blank (NeMo's blank is the last class)");
  }
  model.model_type = yaml_text(root->get("target"), "");
  report.notes.push_back(str_cat(model.describe(), " (from ", kConfigFile, "), ", units.size(),
                                 " classes from ", vocabulary.source, " (blank last)"));
  report.notes.push_back(str_cat("front end: ", kConfigFile,
                                 "'s preprocessor, NeMo's streaming log-mel (16 kHz, 25/10 ms, "
                                 "n_fft 512, preemph 0.97, normalize NA)"));
  stream::BundleManifest manifest =
      nemo_cache_aware_ctc_manifest(model, units, vocabulary.unit_type);
  manifest.source = {{"layout", report.layout},
                     {"model_type", model.model_type},
                     {"model", fs::path(model_file).filename().string()},
                     {"config", kConfigFile},
                     {"vocabulary", vocabulary.source}};
  const BuilderConfig config = model.build_config(options);
  VOXRT_RETURN_IF_ERROR(build_bundle_engine(std::move(model.graph), model_file, config,
                                            options.bundle_dir, "model.engine", options));
  VOXRT_RETURN_IF_ERROR(manifest.write(options.bundle_dir));
  return report;
}

}  // namespace voxrt::model_import
