// Einsum, reference tactic (f32): every output element sums, over the labels the output drops,
// the product of the operands' elements; products in double. An operand's label may repeat (a
// diagonal) and an ellipsis label of size 1 broadcasts.
#include <string>
#include <vector>

#include "backends/cpu/dense/dense_kernels.h"
#include "ir/einsum_equation.h"

namespace voxrt::backends::cpu::dense {
namespace {

class EinsumKernel final : public Kernel {
 public:
  explicit EinsumKernel(const ir::Node& node)
      : where_(node.describe()), equation_(node.attrs.get_string("equation", "")) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    std::vector<std::size_t> ranks;
    std::vector<Dims> dims;
    for (const Tensor* t : inputs) {
      if (!t || t->dtype() != DType::kF32) return unsupported(where_, ": Einsum takes f32 inputs");
      ranks.push_back(t->rank());
      dims.push_back(t->dims());
    }
    VOXRT_ASSIGN_OR_RETURN(const ir::EinsumPlan plan, ir::plan_einsum(where_, equation_, ranks));
    VOXRT_ASSIGN_OR_RETURN(std::vector<std::int64_t> sizes,
                           ir::einsum_label_sizes(where_, plan, dims));
    const auto labels = static_cast<std::size_t>(plan.label_count);
    // stride[i][label]: how far operand i moves when that label advances (0 where broadcast).
    std::vector<std::vector<std::int64_t>> stride(inputs.size(),
                                                  std::vector<std::int64_t>(labels, 0));
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Dims strides = row_major_strides(dims[i]);
      for (std::size_t axis = 0; axis < plan.operands[i].size(); ++axis) {
        if (dims[i][axis] != 1)
          stride[i][static_cast<std::size_t>(plan.operands[i][axis])] += strides[axis];
      }
    }
    std::vector<bool> in_output(labels, false);
    for (int label : plan.output) in_output[static_cast<std::size_t>(label)] = true;
    std::vector<std::size_t> summed;
    for (std::size_t label = 0; label < labels; ++label)
      if (!in_output[label]) summed.push_back(label);
    std::vector<std::int64_t> value(labels, 0);
    float* out = outputs[0]->data<float>();
    const std::int64_t out_count = outputs[0]->element_count();
    for (std::int64_t o = 0; o < out_count; ++o) {
      std::int64_t rest = o;
      for (std::size_t a = plan.output.size(); a-- > 0;) {
        const auto label = static_cast<std::size_t>(plan.output[a]);
        value[label] = rest % sizes[label];
        rest /= sizes[label];
      }
      for (std::size_t label : summed) value[label] = 0;
      bool empty = false;
      for (std::size_t label : summed) empty = empty || sizes[label] == 0;
      double total = 0.0;
      while (!empty) {
        double product = 1.0;
        for (std::size_t i = 0; i < inputs.size(); ++i) {
          std::int64_t offset = 0;
          for (std::size_t label = 0; label < labels; ++label)
            offset += value[label] * stride[i][label];
          product *= inputs[i]->data<float>()[offset];
        }
        total += product;
        std::size_t k = summed.size();
        while (k > 0) {
          const std::size_t label = summed[k - 1];
          if (++value[label] < sizes[label]) break;
          value[label] = 0;
          --k;
        }
        if (k == 0) break;
      }
      out[o] = static_cast<float>(total);
    }
    return Status::ok();
  }

 private:
  std::string where_;
  std::string equation_;
};

}  // namespace

std::unique_ptr<Kernel> make_einsum_reference_kernel(const ir::Node& node) {
  return std::make_unique<EinsumKernel>(node);
}

}  // namespace voxrt::backends::cpu::dense
