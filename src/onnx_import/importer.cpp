#include "onnx_import/importer.h"

#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "onnx_import/graph_import.h"
#include "onnx_import/tensor_conversion.h"

namespace voxrt::onnx_import {

namespace {

// The newest ai.onnx opset whose op forms the importers know (ONNX 1.12 defines up to 17; the
// IR's reduction form is opset 18's, so 18 is understood too).
constexpr int kMaxOnnxOpset = 18;

Expected<std::string> read_file_bytes(const std::string& path, std::string_view what) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return not_found(what, " '", path, "' does not exist or is not a regular file");
  }
  std::ifstream file(path, std::ios::binary);
  if (!file) return io_error("cannot open ", what, " '", path, "'");
  std::ostringstream bytes;
  bytes << file.rdbuf();
  if (file.bad()) return io_error("reading ", what, " '", path, "' failed");
  return std::move(bytes).str();
}

Status read_opsets(const onnx::ModelProto& model, ModelContext& context) {
  bool has_onnx_domain = false;
  for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
    const std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    const auto version = static_cast<int>(std::clamp<std::int64_t>(opset.version(), 0, 1 << 20));
    context.domain_opsets[domain] = version;
    if (domain.empty()) {
      has_onnx_domain = true;
      context.onnx_opset = version;
    }
  }
  // IR version < 3 predates opset_import and means opset 1. Without it a model may still use
  // other domains only; a node of the default domain is refused when it is met.
  if (!has_onnx_domain && model.ir_version() < 3) context.onnx_opset = 1;
  if (context.onnx_opset > kMaxOnnxOpset) {
    return unsupported("the model uses ai.onnx opset ", context.onnx_opset,
                       "; voxrt imports opsets 1 to ", kMaxOnnxOpset);
  }
  if (has_onnx_domain && context.onnx_opset < 1) {
    return invalid_argument("the model imports ai.onnx opset ", context.onnx_opset,
                            ", expected >= 1");
  }
  return Status::ok();
}

Expected<std::unique_ptr<ir::Graph>> import_model_proto(const onnx::ModelProto& model,
                                                        const std::string& external_data_dir) {
  ModelContext context;
  context.external_data_dir = external_data_dir;
  VOXRT_RETURN_IF_ERROR(read_opsets(model, context));
  if (!model.has_graph()) return invalid_argument("the model has no graph");

  auto graph = std::make_unique<ir::Graph>();
  VOXRT_RETURN_IF_ERROR(import_main_graph(model.graph(), context, *graph));
  if (!context.unsupported.empty()) {
    std::string message =
        str_cat("the model has ", context.unsupported.size(), " unsupported node(s) or value(s):");
    for (const std::string& line : context.unsupported) message += str_cat("\n  ", line);
    return unsupported(message);
  }
  for (const auto& entry : model.metadata_props()) graph->metadata[entry.key()] = entry.value();
  // Where the model came from, for `voxrt inspect` (prefixed so they never clash with
  // metadata_props keys of the model contract).
  graph->metadata["onnx.producer_name"] = model.producer_name();
  graph->metadata["onnx.producer_version"] = model.producer_version();
  graph->metadata["onnx.ir_version"] = std::to_string(model.ir_version());
  graph->metadata["onnx.opset"] = std::to_string(context.onnx_opset);
  VOXRT_RETURN_IF_ERROR(graph->validate());
  return graph;
}

}  // namespace

Expected<std::unique_ptr<ir::Graph>> import_model_file(const std::string& path,
                                                       const ImportOptions& options) {
  VOXRT_ASSIGN_OR_RETURN(std::string bytes, read_file_bytes(path, "model file"));
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return corrupt(path, ": not a valid ONNX ModelProto (protobuf parsing of ", bytes.size(),
                   " bytes failed)");
  }
  std::string dir = options.external_data_dir;
  if (dir.empty()) {
    dir = std::filesystem::path(path).parent_path().string();
    if (dir.empty()) dir = ".";
  }
  Expected<std::unique_ptr<ir::Graph>> graph = import_model_proto(model, dir);
  if (!graph) return graph.status().with_context(path);
  return graph;
}

Expected<std::unique_ptr<ir::Graph>> import_model_bytes(const std::string& bytes,
                                                        const ImportOptions& options) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return corrupt("not a valid ONNX ModelProto (protobuf parsing of ", bytes.size(),
                   " bytes failed)");
  }
  return import_model_proto(model, options.external_data_dir);
}

Expected<Tensor> read_tensor_proto_file(const std::string& path, std::string* name) {
  VOXRT_ASSIGN_OR_RETURN(std::string bytes, read_file_bytes(path, "TensorProto file"));
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return corrupt(path, ": not a valid ONNX TensorProto (protobuf parsing of ", bytes.size(),
                   " bytes failed)");
  }
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  Expected<Tensor> tensor =
      tensor_from_proto(proto, str_cat(path, ": tensor '", proto.name(), "'"), dir);
  if (tensor && name) *name = proto.name();
  return tensor;
}

Expected<Tensor> parse_tensor_proto_bytes(const std::string& bytes, std::string* name) {
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) {
    return corrupt("not a valid ONNX TensorProto (protobuf parsing of ", bytes.size(),
                   " bytes failed)");
  }
  Expected<Tensor> tensor = tensor_from_proto(proto, str_cat("tensor '", proto.name(), "'"), "");
  if (tensor && name) *name = proto.name();
  return tensor;
}

Status write_tensor_proto_file(const std::string& path, const Tensor& tensor,
                               const std::string& name) {
  if (!tensor.is_valid()) return invalid_argument(path, ": cannot write an invalid tensor");
  onnx::TensorProto proto;
  tensor_to_proto(tensor, name, &proto);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return io_error("cannot create '", path, "'");
  if (!proto.SerializeToOstream(&file)) return io_error("writing '", path, "' failed");
  file.close();
  if (!file) return io_error("closing '", path, "' failed");
  return Status::ok();
}

}  // namespace voxrt::onnx_import
