// Small helpers to write ONNX ModelProtos in tests without Python.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <vector>

#include "onnx_import/importer.h"

namespace voxrt::onnx_import::testing {

inline std::string testdata_node_dir() {
  return "/usr/share/libonnx-testdata/data/node";
}

inline std::string binary_dir() {
  const char* dir = std::getenv("VOXRT_BINARY_DIR");
  return dir ? dir : ".";
}

// A tensor input/output; dims < 0 are written as dim_param "d<index>"; empty `dims` with
// rank_known false leaves the shape out.
inline onnx::ValueInfoProto tensor_info(const std::string& name, int elem_type,
                                        const std::vector<std::int64_t>& dims,
                                        bool with_shape = true) {
  onnx::ValueInfoProto info;
  info.set_name(name);
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elem_type);
  if (with_shape) {
    auto* shape = tensor->mutable_shape();
    for (std::size_t i = 0; i < dims.size(); ++i) {
      auto* dim = shape->add_dim();
      if (dims[i] >= 0) {
        dim->set_dim_value(dims[i]);
      } else {
        dim->set_dim_param("d" + std::to_string(i));
      }
    }
  }
  return info;
}

inline onnx::NodeProto* add_node(onnx::GraphProto* graph, const std::string& op_type,
                                 std::initializer_list<std::string> inputs,
                                 std::initializer_list<std::string> outputs,
                                 const std::string& name = "", const std::string& domain = "") {
  onnx::NodeProto* node = graph->add_node();
  node->set_op_type(op_type);
  node->set_name(name);
  node->set_domain(domain);
  for (const auto& in : inputs) node->add_input(in);
  for (const auto& out : outputs) node->add_output(out);
  return node;
}

inline void add_ints(onnx::NodeProto* node, const std::string& name,
                     std::vector<std::int64_t> values) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (auto v : values) attr->add_ints(v);
}

inline void add_int(onnx::NodeProto* node, const std::string& name, std::int64_t value) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

inline void add_float(onnx::NodeProto* node, const std::string& name, float value) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(value);
}

inline onnx::GraphProto* add_graph(onnx::NodeProto* node, const std::string& name) {
  auto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::GRAPH);
  attr->mutable_g()->set_name(name);
  return attr->mutable_g();
}

inline onnx::TensorProto float_tensor(const std::string& name,
                                      const std::vector<std::int64_t>& dims,
                                      const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (float v : values) t.add_float_data(v);
  return t;
}

inline onnx::ModelProto make_model(int opset) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("voxrt-test");
  auto* op = model.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model.mutable_graph()->set_name("test");
  return model;
}

inline Expected<std::unique_ptr<ir::Graph>> import_proto(const onnx::ModelProto& model,
                                                         const ImportOptions& options = {}) {
  return import_model_bytes(model.SerializeAsString(), options);
}

}  // namespace voxrt::onnx_import::testing
