#include "ir/shape_inference.h"

namespace voxrt::ir {

Status infer_elementwise(const Node& node, std::span<const ValueInfo> inputs,
                std::vector<InferredOutput>& outputs) {
  return unsupported(node.describe(), ": shape inference for this op is not implemented yet");
}

}  // namespace voxrt::ir
