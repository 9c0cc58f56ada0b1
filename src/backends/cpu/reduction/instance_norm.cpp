// InstanceNormalization (reference tactic only; wav2vec2's feature extractor runs it once, on its
// first convolution): every (n, c) slab normalized over its spatial elements, statistics in
// double, then scale[c] and B[c].
#include <cmath>
#include <string>

#include "backends/cpu/reduction/reduction_kernels.h"

namespace voxrt::backends::cpu::reduction {
namespace {

class InstanceNormKernel final : public Kernel {
 public:
  explicit InstanceNormKernel(const ir::Node& node)
      : where_(node.describe()), epsilon_(node.attrs.get_float("epsilon", 1e-5f)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& x = *inputs[0];
    const Tensor& scale = *inputs[1];
    const Tensor& bias = *inputs[2];
    if (x.rank() < 3) return invalid_argument(where_, ": input must be [N, C, D1, ...]");
    const std::int64_t channels = x.dim(1);
    if (scale.element_count() != channels || bias.element_count() != channels) {
      return invalid_argument(where_, ": scale and B must hold ", channels, " values");
    }
    const std::int64_t spatial =
        channels == 0 || x.dim(0) == 0 ? 0 : x.element_count() / (x.dim(0) * channels);
    const float* in = x.data<float>();
    float* out = outputs[0]->data<float>();
    for (std::int64_t slab = 0; slab < x.dim(0) * channels; ++slab) {
      const float* row = in + slab * spatial;
      double mean = 0.0;
      for (std::int64_t i = 0; i < spatial; ++i) mean += row[i];
      mean /= static_cast<double>(spatial);
      double variance = 0.0;
      for (std::int64_t i = 0; i < spatial; ++i) variance += (row[i] - mean) * (row[i] - mean);
      variance /= static_cast<double>(spatial);
      const std::int64_t c = slab % channels;
      const double gain = scale.data<float>()[c] / std::sqrt(variance + epsilon_);
      const double shift = bias.data<float>()[c];
      for (std::int64_t i = 0; i < spatial; ++i)
        out[slab * spatial + i] = static_cast<float>((row[i] - mean) * gain + shift);
    }
    return Status::ok();
  }

 private:
  std::string where_;
  double epsilon_;
};

}  // namespace

bool instance_norm_supports(const ir::Node& node) {
  for (std::size_t i = 0; i < 3; ++i) {
    if (!node.input(i) || node.input(i)->dtype != DType::kF32) return false;
  }
  return node.output(0) != nullptr;
}

std::unique_ptr<Kernel> make_instance_norm_kernel(const ir::Node& node) {
  return std::make_unique<InstanceNormKernel>(node);
}

}  // namespace voxrt::backends::cpu::reduction
