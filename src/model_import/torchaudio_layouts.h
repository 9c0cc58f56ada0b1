// torchaudio's layouts (one file each).
#pragma once

#include <string>

#include "model_import/model_dir_import.h"

namespace voxrt::model_import {

// A torchaudio Emformer RNN-T exported as its streaming tutorial's user would
// (torchaudio_emformer.cpp): transcriber.onnx, predictor.onnx and joiner.onnx side by side.
bool is_torchaudio_emformer_dir(const std::string& dir);
Expected<ModelDirImportReport> import_torchaudio_emformer(const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
