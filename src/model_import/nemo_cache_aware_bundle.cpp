#include "model_import/nemo_cache_aware_bundle.h"

namespace voxrt::model_import {
namespace {

void add_units(std::map<std::string, std::string>& m, const std::vector<std::string>& units,
               const std::string& unit_type) {
  m["voxrt.vocabulary"] = vocabulary_lines(units);
  m["voxrt.unit"] = unit_type;
  // Character models' words are separated by the space label.
  if (unit_type == "char") m["voxrt.word_boundary"] = " ";
  m["voxrt.blank_id"] = std::to_string(units.size() - 1);
}

}  // namespace

stream::BundleManifest nemo_cache_aware_ctc_manifest(const NemoCacheAwareEncoder& model,
                                                     const std::vector<std::string>& units,
                                                     const std::string& unit_type) {
  stream::BundleManifest manifest;
  manifest.family = "ctc_streaming";
  manifest.engines = {{"model", "model.engine"}};
  manifest.metadata = model.streaming_contract();
  auto& m = manifest.metadata;
  m["voxrt.model_family"] = "ctc_streaming";
  m["voxrt.ctc.length_input"] = kNemoChunkLengthInput;
  add_units(m, units, unit_type);
  return manifest;
}

stream::BundleManifest nemo_cache_aware_transducer_manifest(
    const NemoCacheAwareEncoder& encoder, const std::map<std::string, std::string>& network_keys,
    const std::vector<std::string>& units, const std::string& unit_type) {
  stream::BundleManifest manifest;
  manifest.family = "transducer_stateful";
  manifest.engines = {
      {"encoder", "encoder.engine"}, {"decoder", "decoder.engine"}, {"joiner", "joiner.engine"}};
  manifest.metadata = encoder.streaming_contract();
  auto& m = manifest.metadata;
  for (const auto& [key, value] : network_keys) m[key] = value;
  m["voxrt.model_family"] = "transducer_stateful";
  add_units(m, units, unit_type);
  m["voxrt.transducer.encoder_features_input"] = kNemoCacheAwareFeaturesInput;
  m["voxrt.transducer.encoder_lengths_input"] = kNemoChunkLengthInput;
  m["voxrt.transducer.encoder_lengths"] = "audio";
  m["voxrt.transducer.encoder_output"] = encoder.output;
  return manifest;
}

}  // namespace voxrt::model_import
