// Einsum on the device (einsum.cu): the equation resolved on the host when the plan is made
// (ir::plan_einsum, the same resolution shape inference and the CPU kernel use) into per-label
// sizes and operand strides; one naive tactic, every output element a sum of products in double.
// Exporters write Einsum for small contractions (relative-position terms); attention-sized
// products go through MatMul or the Attention op.
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/einsum_ops.h"
#include "backends/cuda/launch_call.h"
#include "ir/einsum_equation.h"

namespace voxrt::backends::cuda {

std::string einsum_unsupported(const ir::Node& node) {
  if (node.inputs.empty() || node.inputs.size() > static_cast<std::size_t>(ops::kEinsumMaxOperands))
    return str_cat("Einsum with ", node.inputs.size(), " operands (1 to ", ops::kEinsumMaxOperands,
                   " on the CUDA backend)");
  for (const ir::Value* v : node.inputs)
    if (!v || v->dtype != DType::kF32) return "Einsum takes f32 operands on the CUDA backend";
  if (!node.output(0)) return "Einsum needs its output";
  return {};
}

Expected<std::unique_ptr<CudaKernel>> make_einsum_kernel(const ir::Node& node) {
  const std::string why = einsum_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  const std::string where = node.describe();
  const std::string equation = node.attrs.get_string("equation", "");
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    std::vector<std::size_t> ranks;
    std::vector<Dims> dims;
    for (const DevTensor& t : inputs) {
      ranks.push_back(t.dims.size());
      dims.push_back(t.dims);
    }
    VOXRT_ASSIGN_OR_RETURN(const ir::EinsumPlan plan, ir::plan_einsum(where, equation, ranks));
    VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t> sizes,
                           ir::einsum_label_sizes(where, plan, dims));
    if (plan.label_count > ops::kEinsumMaxLabels)
      return unsupported(where, ": ", plan.label_count, " labels (at most ", ops::kEinsumMaxLabels,
                         " on the CUDA backend)");
    ops::EinsumIndex index;
    index.operands = static_cast<int>(inputs.size());
    index.labels = plan.label_count;
    for (int l = 0; l < plan.label_count; ++l) index.size[l] = sizes[static_cast<std::size_t>(l)];
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Dims strides = row_major_strides(dims[i]);
      for (std::size_t axis = 0; axis < plan.operands[i].size(); ++axis)
        if (dims[i][axis] != 1) index.stride[i][plan.operands[i][axis]] += strides[axis];
    }
    std::vector<bool> in_output(static_cast<std::size_t>(plan.label_count), false);
    index.output_rank = static_cast<int>(plan.output.size());
    for (std::size_t a = 0; a < plan.output.size(); ++a) {
      index.output[a] = plan.output[a];
      in_output[static_cast<std::size_t>(plan.output[a])] = true;
    }
    for (int l = 0; l < plan.label_count; ++l)
      if (!in_output[static_cast<std::size_t>(l)]) index.summed[index.summed_count++] = l;
    return launch_call("Einsum", [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                     const CudaRunContext& context) {
      const float* operands[ops::kEinsumMaxOperands] = {};
      for (std::size_t i = 0; i < in.size() && i < ops::kEinsumMaxOperands; ++i)
        operands[i] = in[i].as<const float>();
      return ops::einsum(index, operands, out[0].as<float>(), out[0].count(), context.stream);
    });
  });
}

}  // namespace voxrt::backends::cuda
