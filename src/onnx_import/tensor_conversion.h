// ONNX TensorProto <-> voxrt Tensor, and ONNX element-type codes <-> DType. Every error names the
// tensor (`where`, e.g. "initializer 'conv1.weight'") and says what was expected and found.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <string_view>

#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt::onnx_import {

// ONNX TensorProto.DataType code -> DType. kUnsupported for real ONNX types voxrt does not
// handle (f64, strings, u16, ...), kInvalidArgument for codes that are no ONNX type at all.
Expected<DType> dtype_from_onnx(int onnx_type, std::string_view where);
int onnx_type_from_dtype(DType dtype);
// "FLOAT", "DOUBLE", ... or "code 42" for codes ONNX does not define.
std::string onnx_type_name(int onnx_type);

// Decodes raw_data (little-endian), the typed fields (float_data, int32_data, int64_data) or
// external data. `external_data_dir` is the folder external files are relative to; empty means
// external data is refused (bytes given without a folder).
Expected<Tensor> tensor_from_proto(const onnx::TensorProto& proto, std::string_view where,
                                   const std::string& external_data_dir);
// Writes dims, data_type and raw_data (little-endian).
void tensor_to_proto(const Tensor& tensor, const std::string& name, onnx::TensorProto* proto);

}  // namespace voxrt::onnx_import
