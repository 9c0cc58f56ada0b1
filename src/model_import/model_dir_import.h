// `voxrt build --model-dir DIR`: recognises a model folder as an ecosystem exports it and writes
// one engine bundle (stream/bundle_manifest.h) with every engine, the vocabulary and the model
// contract's keys, so the Recognizer needs no hand-written metadata. One file per layout
// (icefall_transducer.cpp, ...); this file detects which one a folder holds. Errors name the
// missing or unexpected file and metadata key.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "voxrt/builder.h"
#include "voxrt/status.h"

namespace voxrt::model_import {

struct ModelDirImportOptions {
  std::string model_dir;
  // The bundle folder to write (created; existing engine files in it are replaced).
  std::string bundle_dir;
  // Device, precision, threads, autotuning and timing cache of every engine; its profiles and
  // states are set per engine by the importer.
  BuilderConfig build;
  // Streams per encoder call, and hypotheses per stream (beam), for the engines' profiles.
  int max_batch = 32;
  int max_beam = 8;
  // Whisper (multilingual exports): the language of the decoder prompt, as lang_to_id's <|xx|>;
  // empty: each stream's language is detected from its first window.
  std::string language;
  // Called with a line per step ("encoder: built in 3.1 s").
  std::function<void(const std::string&)> on_step;
};

struct ModelDirImportReport {
  std::string layout;  // "icefall-transducer", ...
  std::string family;  // "transducer", ...
  std::vector<std::string> notes;
};

Expected<ModelDirImportReport> import_model_dir(const ModelDirImportOptions& options);

}  // namespace voxrt::model_import
