// Arbitrary bytes as a TensorProto: parse, and when that succeeds the tensor must survive a
// round trip through its own TensorProto unchanged.
#include <onnx/onnx_pb.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "onnx_import/importer.h"
#include "onnx_import/tensor_conversion.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string name;
  auto tensor = voxrt::onnx_import::parse_tensor_proto_bytes(bytes, &name);
  if (!tensor) return 0;
  onnx::TensorProto proto;
  voxrt::onnx_import::tensor_to_proto(*tensor, name, &proto);
  auto again = voxrt::onnx_import::parse_tensor_proto_bytes(proto.SerializeAsString());
  if (!again || again->dims() != tensor->dims() || again->dtype() != tensor->dtype() ||
      again->size_bytes() != tensor->size_bytes() ||
      (tensor->size_bytes() &&
       std::memcmp(again->raw_data(), tensor->raw_data(), tensor->size_bytes()) != 0)) {
    __builtin_trap();
  }
  return 0;
}
