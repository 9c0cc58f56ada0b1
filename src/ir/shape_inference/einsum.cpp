// Shape inference for Einsum (dense family): the output takes the extent of each of its labels.
#include "ir/einsum_equation.h"
#include "ir/shape_inference.h"

namespace voxrt::ir {

Status infer_einsum(const Node& node, std::span<const ValueInfo> inputs,
                    std::vector<InferredOutput>& outputs) {
  if (inputs.empty() || outputs.size() != 1) {
    return invalid_argument(node.describe(), ": expected one or more inputs and one output");
  }
  const DType dtype = inputs[0].dtype;
  std::vector<std::size_t> ranks;
  std::vector<Dims> dims;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].present || inputs[i].dtype != dtype) {
      return invalid_argument(node.describe(), ": every input must be present with one dtype (",
                              dtype_name(dtype), "); input ", i, " is not");
    }
    if (!inputs[i].rank_known) {
      outputs[0].dtype = dtype;
      outputs[0].rank_known = false;
      return Status::ok();
    }
    ranks.push_back(inputs[i].shape.size());
    Dims d;
    for (const Dim& dim : inputs[i].shape) d.push_back(dim.is_known() ? dim.value : -1);
    dims.push_back(std::move(d));
  }
  VOXRT_ASSIGN_OR_RETURN(
      const EinsumPlan plan,
      plan_einsum(node.describe(), node.attrs.get_string("equation", ""), ranks));
  VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t> sizes,
                         einsum_label_sizes(node.describe(), plan, dims));
  outputs[0].dtype = dtype;
  outputs[0].rank_known = true;
  outputs[0].shape.clear();
  for (int label : plan.output) {
    const std::int64_t size = sizes[static_cast<std::size_t>(label)];
    outputs[0].shape.push_back(size >= 0 ? Dim::known(size) : Dim{});
  }
  return Status::ok();
}

}  // namespace voxrt::ir
