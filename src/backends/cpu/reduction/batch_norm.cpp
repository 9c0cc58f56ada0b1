// BatchNormalization, inference form, both tactics: y = (x - mean[c]) / sqrt(var[c] + eps) *
// scale[c] + B[c] over X = [N, C, spatial...]. The vectorized tactic folds each channel into one
// multiply-add (a[c] = scale / sqrt(var + eps), b[c] = B - mean * a), computed once at creation
// when the statistics are constants (the usual case) and per run otherwise.
#include <cmath>

#include "backends/cpu/reduction/reduction_kernels.h"
#include "backends/cpu/reduction/vector_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::reduction {
namespace {

struct ChannelAffine {
  std::vector<float> multiplier;
  std::vector<float> offset;
};

ChannelAffine fold_statistics(const Tensor& scale, const Tensor& bias, const Tensor& mean,
                              const Tensor& variance, float epsilon) {
  const auto channels = static_cast<std::size_t>(scale.element_count());
  ChannelAffine affine;
  affine.multiplier.resize(channels);
  affine.offset.resize(channels);
  for (std::size_t c = 0; c < channels; ++c) {
    const double a = scale.data<float>()[c] /
                     std::sqrt(static_cast<double>(variance.data<float>()[c]) + epsilon);
    affine.multiplier[c] = static_cast<float>(a);
    affine.offset[c] = static_cast<float>(bias.data<float>()[c] - mean.data<float>()[c] * a);
  }
  return affine;
}

VOXRT_MULTIVERSION void scale_shift(const float* x, float* y, std::int64_t n, float a, float b) {
  for (std::int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

class BatchNormKernel final : public Kernel {
 public:
  BatchNormKernel(const ir::Node& node, bool vectorized)
      : where_(node.describe()),
        epsilon_(node.attrs.get_float("epsilon", 1e-5f)),
        vectorized_(vectorized) {
    bool constant = vectorized;
    for (std::size_t i = 1; i < 5; ++i)
      constant = constant && node.input(i) && node.input(i)->is_constant();
    if (constant) {
      folded_ = fold_statistics(*node.input(1)->constant, *node.input(2)->constant,
                                *node.input(3)->constant, *node.input(4)->constant, epsilon_);
    }
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    if (x.rank() < 2)
      return invalid_argument(where_, ": expected X of rank >= 2, found ",
                              dims_to_string(x.dims()));
    const std::int64_t batch = x.dim(0), channels = x.dim(1);
    const std::int64_t spatial =
        channels == 0 || batch == 0 ? 0 : x.element_count() / (batch * channels);
    for (std::size_t i = 1; i < 5; ++i) {
      if (inputs[i]->element_count() != channels) {
        return invalid_argument(where_, ": input ", i, " has ", inputs[i]->element_count(),
                                " elements, expected one per channel (", channels, ")");
      }
    }
    const float* in = x.data<float>();
    float* out = outputs[0]->data<float>();
    if (!vectorized_) {
      const float* scale = inputs[1]->data<float>();
      const float* bias = inputs[2]->data<float>();
      const float* mean = inputs[3]->data<float>();
      const float* variance = inputs[4]->data<float>();
      for (std::int64_t plane = 0; plane < batch * channels; ++plane) {
        const std::int64_t c = plane % channels;
        const double inv_std_dev = 1.0 / std::sqrt(static_cast<double>(variance[c]) + epsilon_);
        for (std::int64_t i = 0; i < spatial; ++i) {
          const std::int64_t at = plane * spatial + i;
          out[at] = static_cast<float>((in[at] - mean[c]) * inv_std_dev * scale[c] + bias[c]);
        }
      }
      return Status::ok();
    }
    ChannelAffine per_run;
    const ChannelAffine* affine = &folded_;
    if (static_cast<std::int64_t>(folded_.multiplier.size()) != channels) {
      per_run = fold_statistics(*inputs[1], *inputs[2], *inputs[3], *inputs[4], epsilon_);
      affine = &per_run;
    }
    context.pool->parallel_for(batch * channels, task_grain(spatial),
                               [&](std::int64_t begin, std::int64_t end) {
                                 for (std::int64_t plane = begin; plane < end; ++plane) {
                                   const auto c = static_cast<std::size_t>(plane % channels);
                                   scale_shift(in + plane * spatial, out + plane * spatial, spatial,
                                               affine->multiplier[c], affine->offset[c]);
                                 }
                               });
    return Status::ok();
  }

 private:
  std::string where_;
  float epsilon_;
  bool vectorized_;
  ChannelAffine folded_;
};

}  // namespace

bool batch_norm_supports(const ir::Node& node) {
  if (node.inputs.size() != 5 || !node.output(0)) return false;
  for (const ir::Value* in : node.inputs) {
    if (!in || in->dtype != DType::kF32) return false;
  }
  for (std::size_t i = 1; i < node.outputs.size(); ++i) {
    if (node.outputs[i]) return false;  // training statistics
  }
  return node.attrs.get_int("training_mode", 0) == 0 && node.attrs.get_int("spatial", 1) != 0;
}

std::unique_ptr<Kernel> make_batch_norm_kernel(const ir::Node& node, TacticId tactic) {
  return std::make_unique<BatchNormKernel>(node, tactic == kVectorizedTactic);
}

}  // namespace voxrt::backends::cpu::reduction
