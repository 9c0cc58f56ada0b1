// Polygraphy's "mark all": a copy of a model whose every intermediate tensor is also a graph
// output, so `voxrt check --mark-all` can compare each layer with onnxruntime and name the first
// tensor that diverges instead of only the final outputs.
#pragma once

#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::onnx_import {

struct MarkedModel {
  std::string model_bytes;           // serialized ModelProto with the extra outputs
  std::vector<std::string> outputs;  // every graph output, in node (topological) order
  bool has_external_data = false;    // weights live in files beside the original model
};

// Marks the outputs of every top-level node (subgraph values stay internal: they are not visible
// outside their If branch). Types come from ONNX's own shape inference where it knows them.
Expected<MarkedModel> mark_all_outputs(const std::string& model_bytes);

}  // namespace voxrt::onnx_import
