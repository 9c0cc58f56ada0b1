// What an engine file holds, read without running it: `voxrt inspect` shows engines built for
// another CPU or for CUDA on any machine (no target check, no plan, no device). Loading an engine
// to run it is Engine::load_file.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "runtime/engine_format.h"
#include "voxrt/engine.h"

namespace voxrt::runtime {

struct EngineDescription {
  std::size_t file_bytes = 0;
  EngineContents contents;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  // Whether Engine::load_file would accept it here; if not, why (another CPU's ISA, a CUDA
  // engine without the CUDA backend or a GPU, another builder version).
  Status runs_here;
  std::shared_ptr<void> image;  // the file's bytes, which `contents` points into
};

Expected<EngineDescription> describe_engine_file(const std::string& path);

// The public description of a graph input or output.
TensorInfo describe_value(const ir::Value& value);

}  // namespace voxrt::runtime
