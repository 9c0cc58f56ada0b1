// What NeMo's own export layout keeps beside the ONNX files: the unpacked .nemo archive's
// model_config.yaml (read by nemo_model_config.h) and its tokenizer artifacts. Shared by the
// offline CTC import (nemo_ctc.cpp) and the cache-aware streaming import of NeMo's own layout
// (nemo_native_cache_aware.cpp).
#pragma once

#include <string>
#include <vector>

#include "audio/nemo_features.h"
#include "model_import/import_support.h"
#include "model_import/nemo_model_config.h"

namespace voxrt::model_import {

// A scalar's text, or `fallback` when absent, null or not a scalar.
std::string yaml_text(const YamlNode* node, const std::string& fallback);
// A number (`key` names it in errors), or `fallback` when absent or null.
Expected<double> yaml_number(const YamlNode* node, const std::string& key, const std::string& file,
                             double fallback);
// true / True / 1, or `fallback` when absent.
bool yaml_bool(const YamlNode* node, bool fallback);

// The `preprocessor` section (AudioToMelSpectrogramPreprocessor's arguments, its defaults where
// absent). Errors name `file` and the key.
Expected<audio::NemoFeatureConfig> nemo_front_end_from_config(const YamlNode& root,
                                                              const std::string& file);

struct NemoVocabulary {
  std::vector<std::string> units;  // without the blank
  std::string unit_type;           // "pieces" or "char"
  std::string source;              // the file or config key read
};

// The units: decoder.vocabulary (or labels) for character models, else the SentencePiece
// vocabulary the config's tokenizer section names (tokenizer.spe_tokenizer_vocab, a
// "nemo:<hash>_tokenizer.vocab" artifact in `dir`) or the folder's one *tokenizer.vocab, or
// without one the SentencePiece model's pieces (tokenizer.model_path or *tokenizer.model).
Expected<NemoVocabulary> nemo_vocabulary_from_config(const std::string& dir, const YamlNode& root,
                                                     const std::string& config_file);

}  // namespace voxrt::model_import
