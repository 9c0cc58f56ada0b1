// The parts of a NeMo model_config.yaml (the .nemo archive's model config, as OmegaConf writes it)
// that the import needs: a small reader of the YAML subset OmegaConf emits (block maps and lists,
// plain and quoted scalars, one-line flow lists, comments, lists of lists written "- - x"), not a
// general YAML parser: anchors,
// multi-line scalars and multi-line flow collections are read as opaque text.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::model_import {

struct YamlNode {
  enum class Kind { kNull, kScalar, kMap, kList };
  Kind kind = Kind::kNull;
  std::string scalar;
  std::vector<std::pair<std::string, std::shared_ptr<YamlNode>>> map;
  std::vector<std::shared_ptr<YamlNode>> list;

  // The child under `key` of a map; nullptr when absent or not a map.
  const YamlNode* get(const std::string& key) const;
  // The node at a dotted path ("preprocessor.features").
  const YamlNode* at(const std::string& dotted) const;
  // A scalar that YAML reads as null ("null", "~", "None" as OmegaConf writes Python's None).
  bool is_null() const;
};

// Parses `text` (named `where` in errors: file:line).
Expected<std::shared_ptr<YamlNode>> parse_yaml_subset(const std::string& text,
                                                      const std::string& where);
Expected<std::shared_ptr<YamlNode>> read_yaml_subset_file(const std::string& path);

}  // namespace voxrt::model_import
