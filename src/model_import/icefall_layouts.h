// The icefall / sherpa-onnx layouts (one file each).
#pragma once

#include <string>

#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// encoder*.onnx, decoder*.onnx and joiner*.onnx side by side.
bool is_icefall_transducer_dir(const std::string& dir);
Expected<ModelDirImportReport> import_icefall_transducer(const ModelDirImportOptions& options);

// ctc*.onnx (a streaming encoder with log_probs) and tokens.txt.
bool is_icefall_streaming_ctc_dir(const std::string& dir);
Expected<ModelDirImportReport> import_icefall_streaming_ctc(const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
