// What NeMo's CTC and transducer imports share about the offline encoder they export: its
// engine's profile (1..max_batch utterances of up to one 30 s segment), the offline families'
// contract keys (voxrt.nemo.* front end, segments, subsampling) and the front end sherpa-onnx's
// layouts imply (they keep no preprocessor settings).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "audio/nemo_features.h"
#include "ir/graph.h"
#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// NeMo's encoder input and length names (its Exportable's).
inline constexpr const char* kNemoFeaturesInput = "audio_signal";
inline constexpr const char* kNemoLengthInput = "length";

// The keys of an offline family over NeMo's front end: voxrt.nemo.*, voxrt.model_family, the
// subsampling, the segment length and the encoder's input / output names.
std::map<std::string, std::string> nemo_offline_contract(const audio::NemoFeatureConfig& front_end,
                                                         int subsampling, const std::string& family,
                                                         const std::string& output);

// Builds the encoder graph (inputs audio_signal [B, n_mels, T] and length [B]) into
// `engine_file` of the bundle with one profile of 1..max_batch utterances of 1..one segment's
// frames.
Status build_nemo_offline_encoder(std::unique_ptr<ir::Graph> graph, int n_mels,
                                  const std::string& source_file,
                                  const audio::NemoFeatureConfig& front_end,
                                  const std::string& engine_file,
                                  const ModelDirImportOptions& options);

// sherpa-onnx's NeMo layouts keep no preprocessor settings: NeMo's Conformer/FastConformer
// defaults (16 kHz, 25/10 ms hann frames, n_fft 512, pre-emphasis 0.97, Slaney mel, log + 2^-24)
// with the encoder's mel bins and the exporter's normalize_type.
Expected<audio::NemoFeatureConfig> sherpa_nemo_front_end(int n_mels,
                                                         const std::string& normalize_type);

}  // namespace voxrt::model_import
