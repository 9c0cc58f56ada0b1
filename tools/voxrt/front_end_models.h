// Front-end models for `voxrt transcribe` and `voxrt serve`: Silero VAD and the wake-word chain
// are given as ONNX files (built once into an engine cache) or as engines (loaded as they are).
#pragma once

#include <string>

#include "stream/wake_word.h"
#include "voxrt/builder.h"

namespace voxrt::cli {

// The cache folder: $VOXRT_CACHE_DIR, else $XDG_CACHE_HOME/voxrt, else ~/.cache/voxrt.
std::string engine_cache_dir();

// `path` ending in .onnx is built with `config` into the cache, keyed by a hash of the model
// bytes, the config and the builder version, unless a cached engine is there; any other path is
// taken as an engine file. Returns the engine path. Progress goes to stderr.
Expected<std::string> engine_for_model(const std::string& path, const BuilderConfig& config,
                                       const std::string& config_tag);

// Silero VAD v5: --fixed-input sr=16000, input [1..32, 576], state [2, 1..32, 128].
Expected<std::string> silero_vad_engine(const std::string& path);

// The wake-word chain from a head model (.onnx or .engine) or a folder holding exactly one head;
// the melspectrogram and embedding models are taken from `mel` / `embedding` when given, else
// from beside the head (melspectrogram.onnx, embedding_model.onnx, or .engine).
Expected<stream::WakeWordConfig> wake_word_engines(const std::string& head_or_dir,
                                                   const std::string& mel,
                                                   const std::string& embedding);

}  // namespace voxrt::cli
