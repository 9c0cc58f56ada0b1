// ONNX AttributeProto -> ir::Attributes. GRAPH attributes are left to the control-flow importer,
// which needs the enclosing scope to resolve the names a subgraph reads.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>

#include "ir/attributes.h"
#include "voxrt/status.h"

namespace voxrt::onnx_import {

// The attribute's type, inferring it from the filled field for old models that leave it unset.
onnx::AttributeProto::AttributeType attribute_type(const onnx::AttributeProto& attribute);

// Converts every non-GRAPH attribute of `node` into `out`. `where` names the node for errors;
// TENSOR attributes may use external data relative to `external_data_dir`.
Status convert_attributes(const onnx::NodeProto& node, std::string_view where,
                          const std::string& external_data_dir, ir::Attributes& out);

}  // namespace voxrt::onnx_import
