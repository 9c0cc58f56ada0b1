// The Hugging Face optimum layouts (one file each).
#pragma once

#include <string>

#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// encoder_model.onnx with decoder_model.onnx / decoder_with_past_model.onnx (or the merged
// decoder, which is refused with a message), config.json, generation_config.json, vocab.json.
bool is_optimum_whisper_dir(const std::string& dir);
Expected<ModelDirImportReport> import_optimum_whisper(const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
