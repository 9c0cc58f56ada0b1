// ONNX ModelProto -> IR graph. One small importer per op family (src/onnx_import/ops/); the IR
// never sees protobuf. Every unsupported node is reported at once, each with its name, op type,
// domain and opset.
#pragma once

#include <string>

#include "ir/graph.h"

namespace voxrt::onnx_import {

struct ImportOptions {
  // Folder that external-data weight files are relative to (defaults to the model's folder).
  std::string external_data_dir;
};

Expected<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path,
                                                       const ImportOptions& options = {});
Expected<std::unique_ptr<ir::Graph>> import_model_bytes(const std::string& bytes,
                                                        const ImportOptions& options = {});

// A TensorProto file (input_0.pb of ONNX's backend tests) <-> Tensor; `name` receives the proto's
// name when not null.
Expected<Tensor> read_tensor_proto_file(const std::string& path, std::string* name = nullptr);
Expected<Tensor> parse_tensor_proto_bytes(const std::string& bytes, std::string* name = nullptr);
Status write_tensor_proto_file(const std::string& path, const Tensor& tensor,
                               const std::string& name);

}  // namespace voxrt::onnx_import
