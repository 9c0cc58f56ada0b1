// The cache-aware streaming sizes of a NeMo ConformerEncoder from its model_config.yaml, as NeMo's
// ConformerEncoder.setup_streaming_params computes them with its defaults (no chunk_size or
// shift_size override), which is what model.export() with cache support bakes into the graph:
//   lookahead      = att_context_size[1] (chunked_limited; cache_drop_size 0)
//   chunk = shift  = subsampling_factor * (1 + lookahead)     (ConvSubsampling's sampling frames
//                                                              [1, factor], steady state)
//   pre-encode     = subsampling_factor + 1                   (ConvSubsampling's streaming cache)
//   last-channel cache = att_context_size[0];  last-time cache = conv_context_size[0]
// NeMo's own export writes no metadata and leaves the caches' cache axes dynamic, so these come
// from the config; the graph's static dims (layers, d_model, n_mels) are checked against them.
#pragma once

#include <string>

#include "audio/nemo_features.h"
#include "model_import/nemo_cache_aware_encoder.h"
#include "model_import/nemo_model_config.h"

namespace voxrt::model_import {

// Errors name `file` and the key, and say what was expected and found (a model that is not
// cache-aware, such as one with regular attention or a symmetric convolution, is refused).
Expected<NemoCacheAwareSizes> nemo_cache_aware_sizes_from_config(const YamlNode& root,
                                                                 const std::string& file);

// The streaming front end (audio/nemo_log_mel.h) computes NeMo's defaults only: every
// preprocessor setting of `config` must be one of them, normalize NA, and n_mels the graph's
// `graph_mels`. Errors name the key with the expected and found values.
Status check_nemo_streaming_front_end(const audio::NemoFeatureConfig& config, int graph_mels,
                                      const std::string& config_file,
                                      const std::string& model_file);

}  // namespace voxrt::model_import
