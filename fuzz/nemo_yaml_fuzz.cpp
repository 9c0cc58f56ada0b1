// libFuzzer target: arbitrary bytes as a NeMo model_config.yaml (the reader of the YAML subset
// that `voxrt build --model-dir` uses on a .nemo archive's config). Bad input must give an error,
// never a crash, a hang or unbounded recursion; what parses must be walkable.
#include <cstddef>
#include <cstdint>
#include <string>

#include "model_import/nemo_model_config.h"

namespace {

using voxrt::model_import::YamlNode;

std::size_t walk(const YamlNode& node, int depth) {
  if (depth > 10000) __builtin_trap();
  std::size_t count = 1;
  (void)node.is_null();
  for (const auto& [key, child] : node.map) {
    if (!child) __builtin_trap();
    if (node.get(key) == nullptr) __builtin_trap();  // every key it holds can be looked up
    count += walk(*child, depth + 1);
  }
  for (const auto& child : node.list) {
    if (!child) __builtin_trap();
    count += walk(*child, depth + 1);
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto parsed = voxrt::model_import::parse_yaml_subset(text, "fuzz.yaml");
  if (!parsed) return 0;
  if (!*parsed) __builtin_trap();
  walk(**parsed, 0);
  (void)(*parsed)->at("preprocessor.features");
  (void)(*parsed)->at("decoder.vocabulary");
  return 0;
}
