// The one place that knows every model family (STYLE.md 6, 17): the family written in the model
// picks the module.
#include <filesystem>

#include "stream/bundle_manifest.h"
#include "stream/ctc/ctc_model.h"
#include "stream/ctc/offline_ctc_model.h"
#include "stream/encoder_decoder/encoder_decoder_model.h"
#include "stream/model_family.h"
#include "stream/recognizer.h"
#include "stream/transducer/offline_transducer_model.h"
#include "stream/transducer/stateful_transducer_model.h"
#include "stream/transducer/transducer_model.h"

namespace voxrt::stream {

Expected<std::shared_ptr<ModelFamily>> load_model_family(const RecognizerConfig& config) {
  if (is_bundle_path(config.engine_path)) {
    const std::string folder = bundle_folder(config.engine_path);
    VOXRT_ASSIGN_OR_RETURN(BundleManifest manifest, BundleManifest::read(folder));
    const std::string model_dir = config.model_dir.empty() ? folder : config.model_dir;
    if (manifest.family == "ctc_streaming") {
      VOXRT_ASSIGN_OR_RETURN(std::string path, manifest.engine_path(folder, "model"));
      VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(path));
      VOXRT_ASSIGN_OR_RETURN(auto model, CtcModel::create(std::move(engine), manifest.metadata,
                                                          path, model_dir, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    if (manifest.family == "ctc_offline") {
      VOXRT_ASSIGN_OR_RETURN(std::string path, manifest.engine_path(folder, "model"));
      VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(path));
      VOXRT_ASSIGN_OR_RETURN(
          auto model,
          OfflineCtcModel::create(std::move(engine), manifest.metadata, path, model_dir, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    if (manifest.family == "transducer") {
      VOXRT_ASSIGN_OR_RETURN(auto model, TransducerModel::create(manifest, folder, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    if (manifest.family == "transducer_stateful") {
      VOXRT_ASSIGN_OR_RETURN(auto model, StatefulTransducerModel::create(manifest, folder, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    if (manifest.family == "transducer_offline") {
      VOXRT_ASSIGN_OR_RETURN(auto model, OfflineTransducerModel::create(manifest, folder, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    if (manifest.family == "encoder_decoder") {
      VOXRT_ASSIGN_OR_RETURN(auto model, EncoderDecoderModel::create(manifest, folder, config));
      return std::shared_ptr<ModelFamily>(std::move(model));
    }
    return invalid_argument(
        folder, "/", BundleManifest::kFileName, ": family '", manifest.family,
        "' is not one this voxrt runs (ctc_streaming, ctc_offline, "
        "transducer, transducer_stateful, transducer_offline, encoder_decoder)");
  }
  VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(config.engine_path));
  const auto& metadata = engine->metadata();
  auto family = metadata.find("voxrt.model_family");
  if (family == metadata.end() || family->second != "ctc_streaming") {
    return invalid_argument(
        config.engine_path, ": voxrt.model_family is '",
        family == metadata.end() ? "(missing)" : family->second,
        "'; an engine file holds a 'ctc_streaming' model (docs/model_contract.md); other families "
        "come as engine bundles (voxrt build --model-dir)");
  }
  const std::string model_dir =
      config.model_dir.empty() ? std::filesystem::path(config.engine_path).parent_path().string()
                               : config.model_dir;
  const std::map<std::string, std::string> contract = metadata;
  VOXRT_ASSIGN_OR_RETURN(auto model, CtcModel::create(std::move(engine), contract,
                                                      config.engine_path, model_dir, config));
  return std::shared_ptr<ModelFamily>(std::move(model));
}

}  // namespace voxrt::stream
