// NeMo's exports (one file per layout: nemo_ctc.cpp, nemo_transducer.cpp): what sherpa-onnx's
// scripts/nemo/*/export-onnx-ctc*.py leave, and what NeMo's own model.export() leaves next to the
// unpacked .nemo archive: offline, whole-utterance models (family ctc_offline), and sherpa-onnx's
// export of a cache-aware streaming model (family ctc_streaming).
#pragma once

#include <string>

#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// model.onnx (or model*.onnx) and tokens.txt, the ONNX file's metadata_props naming it a NeMo
// export (normalize_type, subsampling_factor, vocab_size).
bool is_nemo_sherpa_ctc_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_sherpa_ctc(const ModelDirImportOptions& options);

// model_config.yaml (a .nemo archive's) and one *.onnx.
bool is_nemo_export_ctc_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_export_ctc(const ModelDirImportOptions& options);

// sherpa-onnx's layout of NeMo's cache-aware streaming FastConformer-CTC
// (nemo_cache_aware_ctc.cpp): model.onnx with the cache inputs (cache_last_channel, ...) and
// tokens.txt; family ctc_streaming.
bool is_nemo_cache_aware_ctc_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_cache_aware_ctc(const ModelDirImportOptions& options);

// NeMo's own export layout of the cache-aware streaming FastConformer-CTC
// (nemo_native_cache_aware.cpp): model_config.yaml and one *.onnx with the cache inputs, no
// metadata_props; family ctc_streaming.
bool is_nemo_native_cache_aware_ctc_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_native_cache_aware_ctc(
    const ModelDirImportOptions& options);

// NeMo's own export layout of the cache-aware streaming FastConformer transducer (RNN-T)
// (nemo_native_cache_aware_transducer.cpp): model_config.yaml, encoder*.onnx with the cache
// inputs and decoder_joint*.onnx; family transducer_stateful.
bool is_nemo_native_cache_aware_transducer_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_native_cache_aware_transducer(
    const ModelDirImportOptions& options);

// sherpa-onnx's layout of NeMo's cache-aware streaming FastConformer transducer (RNN-T)
// (nemo_cache_aware_transducer.cpp): the transducer files below, the encoder taking NeMo's
// caches; family transducer_stateful.
bool is_nemo_cache_aware_transducer_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_cache_aware_transducer(
    const ModelDirImportOptions& options);

// sherpa-onnx's NeMo transducer layout (nemo_transducer.cpp): encoder*.onnx, decoder*.onnx,
// joiner*.onnx and tokens.txt, the decoder an LSTM prediction network with (h, c) inputs.
bool is_nemo_transducer_dir(const std::string& dir);
Expected<ModelDirImportReport> import_nemo_transducer(const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
