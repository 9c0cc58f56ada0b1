#include "onnx_import/attribute_conversion.h"

#include "onnx_import/tensor_conversion.h"

namespace voxrt::onnx_import {

onnx::AttributeProto::AttributeType attribute_type(const onnx::AttributeProto& attribute) {
  if (attribute.type() != onnx::AttributeProto::UNDEFINED) return attribute.type();
  // IR version 1 models may leave `type` unset; the filled field tells.
  if (attribute.has_f()) return onnx::AttributeProto::FLOAT;
  if (attribute.has_i()) return onnx::AttributeProto::INT;
  if (attribute.has_s()) return onnx::AttributeProto::STRING;
  if (attribute.has_t()) return onnx::AttributeProto::TENSOR;
  if (attribute.has_g()) return onnx::AttributeProto::GRAPH;
  if (attribute.floats_size()) return onnx::AttributeProto::FLOATS;
  if (attribute.ints_size()) return onnx::AttributeProto::INTS;
  if (attribute.strings_size()) return onnx::AttributeProto::STRINGS;
  if (attribute.tensors_size()) return onnx::AttributeProto::TENSORS;
  if (attribute.graphs_size()) return onnx::AttributeProto::GRAPHS;
  return onnx::AttributeProto::UNDEFINED;
}

Status convert_attributes(const onnx::NodeProto& node, std::string_view where,
                          const std::string& external_data_dir, ir::Attributes& out) {
  for (const onnx::AttributeProto& attribute : node.attribute()) {
    const std::string& name = attribute.name();
    const std::string attr_where = str_cat(where, " attribute '", name, "'");
    if (name.empty()) return invalid_argument(where, ": an attribute has no name");
    if (!attribute.ref_attr_name().empty()) {
      return unsupported(attr_where, ": references function attribute '", attribute.ref_attr_name(),
                         "' (only valid inside ONNX functions)");
    }
    if (out.has(name)) return invalid_argument(attr_where, ": given twice");
    switch (attribute_type(attribute)) {
      case onnx::AttributeProto::INT:
        out.set(name, static_cast<std::int64_t>(attribute.i()));
        break;
      case onnx::AttributeProto::FLOAT: out.set(name, attribute.f()); break;
      case onnx::AttributeProto::STRING: out.set(name, attribute.s()); break;
      case onnx::AttributeProto::INTS:
        out.set(name, std::vector<std::int64_t>(attribute.ints().begin(), attribute.ints().end()));
        break;
      case onnx::AttributeProto::FLOATS:
        out.set(name, std::vector<float>(attribute.floats().begin(), attribute.floats().end()));
        break;
      case onnx::AttributeProto::STRINGS:
        out.set(name,
                std::vector<std::string>(attribute.strings().begin(), attribute.strings().end()));
        break;
      case onnx::AttributeProto::TENSOR: {
        VOXRT_ASSIGN_OR_RETURN(Tensor tensor,
                               tensor_from_proto(attribute.t(), attr_where, external_data_dir));
        out.set(name, std::move(tensor));
        break;
      }
      case onnx::AttributeProto::GRAPH: break;  // the control-flow importer converts these
      case onnx::AttributeProto::UNDEFINED:
        // ONNX defines an attribute with no value as the default; nothing to store.
        break;
      default:
        return unsupported(attr_where, ": attribute type ",
                           onnx::AttributeProto_AttributeType_Name(attribute_type(attribute)),
                           " is not supported");
    }
  }
  return Status::ok();
}

}  // namespace voxrt::onnx_import
