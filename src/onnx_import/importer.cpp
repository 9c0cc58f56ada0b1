#include "onnx_import/importer.h"

namespace voxrt::onnx_import {

Expected<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path, const ImportOptions&) {
  return unsupported(path, ": the ONNX importer is not implemented yet");
}

Expected<std::unique_ptr<ir::Graph>> import_model_bytes(const std::string&, const ImportOptions&) {
  return unsupported("the ONNX importer is not implemented yet");
}

Expected<Tensor> read_tensor_proto_file(const std::string& path, std::string*) {
  return unsupported(path, ": TensorProto reading is not implemented yet");
}

Expected<Tensor> parse_tensor_proto_bytes(const std::string&, std::string*) {
  return unsupported("TensorProto parsing is not implemented yet");
}

Status write_tensor_proto_file(const std::string& path, const Tensor&, const std::string&) {
  return unsupported(path, ": TensorProto writing is not implemented yet");
}

}  // namespace voxrt::onnx_import
