#include "runtime/engine_description.h"

#include <fstream>
#include <iterator>

#include "runtime/engine_impl.h"

namespace voxrt::runtime {

TensorInfo describe_value(const ir::Value& value) {
  TensorInfo info;
  info.name = value.name;
  info.dtype = value.dtype;
  for (const ir::Dim& d : value.shape) {
    info.dims.push_back(d.is_known() ? d.value : -1);
    info.dim_names.push_back(d.symbol);
  }
  return info;
}

Expected<EngineDescription> describe_engine_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error(path, ": cannot open the engine file");
  auto bytes = std::make_shared<std::string>((std::istreambuf_iterator<char>(in)),
                                             std::istreambuf_iterator<char>());
  if (bytes->empty()) return io_error(path, ": the engine file is empty");
  EngineDescription description;
  description.image = bytes;
  description.file_bytes = bytes->size();
  auto contents = deserialize_engine(bytes->data(), bytes->size(), bytes);
  if (!contents) return contents.status().with_context(path);
  description.contents = std::move(*contents);
  for (const ir::Value* v : description.contents.graph->inputs)
    description.inputs.push_back(describe_value(*v));
  for (const ir::Value* v : description.contents.graph->outputs)
    description.outputs.push_back(describe_value(*v));
  description.runs_here = voxrt::check_target(description.contents.target);
  return description;
}

}  // namespace voxrt::runtime
