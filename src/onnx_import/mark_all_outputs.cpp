#include "onnx_import/mark_all_outputs.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <set>

namespace voxrt::onnx_import {

Expected<MarkedModel> mark_all_outputs(const std::string& model_bytes) {
  onnx::ModelProto model;
  if (!model.ParseFromString(model_bytes)) {
    return invalid_argument("the model is not a valid ONNX ModelProto (", model_bytes.size(),
                            " bytes)");
  }
  MarkedModel marked;
  for (const onnx::TensorProto& initializer : model.graph().initializer()) {
    if (initializer.data_location() == onnx::TensorProto::EXTERNAL) marked.has_external_data = true;
  }
  // ONNX's inference gives the intermediate types onnxruntime wants on graph outputs. It throws on
  // models it cannot follow; the outputs are then added without types, which onnxruntime and
  // voxrt both infer themselves.
  onnx::ModelProto inferred = model;
  try {
    onnx::shape_inference::InferShapes(inferred);
  } catch (const std::exception&) {
    inferred = model;
  }
  std::map<std::string, const onnx::ValueInfoProto*> known_types;
  for (const onnx::ValueInfoProto& info : inferred.graph().value_info()) {
    known_types[info.name()] = &info;
  }
  onnx::GraphProto& graph = *model.mutable_graph();
  std::set<std::string> already_outputs;
  for (const onnx::ValueInfoProto& output : graph.output()) already_outputs.insert(output.name());
  std::set<std::string> graph_inputs;
  for (const onnx::ValueInfoProto& input : graph.input()) graph_inputs.insert(input.name());
  for (const onnx::NodeProto& node : graph.node()) {
    for (const std::string& name : node.output()) {
      if (name.empty() || graph_inputs.count(name)) continue;
      marked.outputs.push_back(name);
      if (!already_outputs.insert(name).second) continue;
      onnx::ValueInfoProto* output = graph.add_output();
      if (auto it = known_types.find(name); it != known_types.end()) {
        *output = *it->second;
      } else {
        output->set_name(name);
      }
    }
  }
  // Graph outputs that no node produces (an input or an initializer passed straight through).
  for (const onnx::ValueInfoProto& output : graph.output()) {
    bool listed = false;
    for (const std::string& name : marked.outputs) listed = listed || name == output.name();
    if (!listed) marked.outputs.push_back(output.name());
  }
  if (!model.SerializeToString(&marked.model_bytes)) {
    return internal_error("cannot serialize the marked model");
  }
  return marked;
}

}  // namespace voxrt::onnx_import
