// The bundle manifests the cache-aware NeMo imports write, whichever layout the files came in
// (sherpa-onnx's: nemo_cache_aware_ctc.cpp, nemo_cache_aware_transducer.cpp; NeMo's own:
// nemo_native_cache_aware.cpp, nemo_native_cache_aware_transducer.cpp): one place for the
// contract keys, so that both layouts of one model give the same bundle. The callers add the
// manifest's `source` (the files they read).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "model_import/nemo_cache_aware_encoder.h"
#include "stream/bundle_manifest.h"

namespace voxrt::model_import {

// Family ctc_streaming: engine "model", the encoder's streaming contract, the chunk's length
// input, the units (`units`: by id, the blank last; `unit_type` "pieces" or "char").
stream::BundleManifest nemo_cache_aware_ctc_manifest(const NemoCacheAwareEncoder& model,
                                                     const std::vector<std::string>& units,
                                                     const std::string& unit_type);

// Family transducer_stateful: engines encoder, decoder, joiner; the encoder's streaming contract
// and inputs, `network_keys` (NemoPredictionNetworks::metadata), the units as above.
stream::BundleManifest nemo_cache_aware_transducer_manifest(
    const NemoCacheAwareEncoder& encoder, const std::map<std::string, std::string>& network_keys,
    const std::vector<std::string>& units, const std::string& unit_type);

}  // namespace voxrt::model_import
