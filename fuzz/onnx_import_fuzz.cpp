// Arbitrary bytes as an ONNX model: the importer must return a value or an error, never crash,
// leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

#include "onnx_import/importer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  auto graph = voxrt::onnx_import::import_model_bytes(bytes);
  if (graph) {
    // An imported graph must be consistent.
    if (!graph.value()->validate()) __builtin_trap();
  }
  return 0;
}
