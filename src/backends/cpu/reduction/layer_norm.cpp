// LayerNormalization (opset 17), both tactics: each row of the flattened [rows, n] view (n = the
// product of dims[axis:]) is normalized to zero mean and unit variance, then scaled and shifted.
// Statistics are float (stash_type 1). The vectorized tactic uses two passes over the row
// (mean, then deviations from it) rather than one-pass E[x^2] - E[x]^2, which loses every digit
// when |mean| >> std; the row is in L1 for the second pass, so it costs little.
#include <algorithm>
#include <cmath>

#include "backends/cpu/reduction/reduction_kernels.h"
#include "backends/cpu/reduction/vector_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::reduction {
namespace {

struct Statistics {
  float* mean = nullptr;         // optional output, one per row
  float* inv_std_dev = nullptr;  // optional output, one per row
};

// Scale or bias as n values, one per normalized element; `storage` holds them when `param` had
// to be broadcast (a shape like [1] or [1, C] against [T, C]).
const float* per_element(const Tensor& param, const Dims& normalized_dims,
                         std::vector<float>& storage) {
  const std::int64_t n = element_count(normalized_dims);
  if (param.element_count() == n) return param.data<float>();
  storage.resize(static_cast<std::size_t>(n));
  const Dims& pdims = param.dims();
  const std::size_t offset = normalized_dims.size() - pdims.size();
  const Dims pstrides = row_major_strides(pdims);
  std::vector<std::int64_t> index(normalized_dims.size(), 0);
  for (std::int64_t flat = 0; flat < n; ++flat) {
    std::int64_t source = 0;
    for (std::size_t d = 0; d < pdims.size(); ++d) {
      if (pdims[d] != 1) source += index[offset + d] * pstrides[d];
    }
    storage[static_cast<std::size_t>(flat)] = param.data<float>()[source];
    for (std::size_t d = normalized_dims.size(); d-- > 0;) {
      if (++index[d] < normalized_dims[d]) break;
      index[d] = 0;
    }
  }
  return storage.data();
}

void reference_rows(const float* x, float* y, std::int64_t rows, std::int64_t n, const float* scale,
                    const float* bias, float epsilon, Statistics stats) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    double mean = 0.0;
    for (std::int64_t j = 0; j < n; ++j) mean += in[j];
    mean /= static_cast<double>(n);
    double variance = 0.0;
    for (std::int64_t j = 0; j < n; ++j) variance += (in[j] - mean) * (in[j] - mean);
    variance /= static_cast<double>(n);
    const double inv_std_dev = 1.0 / std::sqrt(variance + epsilon);
    for (std::int64_t j = 0; j < n; ++j) {
      const double normalized = (in[j] - mean) * inv_std_dev * scale[j];
      out[j] = static_cast<float>(bias ? normalized + bias[j] : normalized);
    }
    if (stats.mean) stats.mean[r] = static_cast<float>(mean);
    if (stats.inv_std_dev) stats.inv_std_dev[r] = static_cast<float>(inv_std_dev);
  }
}

VOXRT_MULTIVERSION void vectorized_rows(const float* x, float* y, std::int64_t rows, std::int64_t n,
                                        const float* scale, const float* bias, float epsilon,
                                        Statistics stats) {
  const float inv_n = 1.0f / static_cast<float>(n);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const float first_mean = row_sum(in, n) * inv_n;
    const Deviations deviations = row_deviations(in, n, first_mean);
    const float correction = deviations.sum * inv_n;
    const float mean = first_mean + correction;
    const float variance = std::max(0.0f, deviations.sum_squares * inv_n - correction * correction);
    const float inv_std_dev = 1.0f / std::sqrt(variance + epsilon);
    if (bias) {
      for (std::int64_t j = 0; j < n; ++j)
        out[j] = (in[j] - mean) * inv_std_dev * scale[j] + bias[j];
    } else {
      for (std::int64_t j = 0; j < n; ++j) out[j] = (in[j] - mean) * inv_std_dev * scale[j];
    }
    if (stats.mean) stats.mean[r] = mean;
    if (stats.inv_std_dev) stats.inv_std_dev[r] = inv_std_dev;
  }
}

class LayerNormKernel final : public Kernel {
 public:
  LayerNormKernel(const ir::Node& node, bool vectorized)
      : where_(node.describe()),
        axis_(node.attrs.get_int("axis", -1)),
        epsilon_(node.attrs.get_float("epsilon", 1e-5f)),
        vectorized_(vectorized) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis, normalized_axis(where_, axis_, x.rank()));
    const Dims normalized_dims(x.dims().begin() + axis, x.dims().end());
    const std::int64_t n = element_count(normalized_dims);
    const std::int64_t rows = n == 0 ? 0 : x.element_count() / n;
    Statistics stats;
    if (outputs.size() > 1 && outputs[1]) stats.mean = outputs[1]->data<float>();
    if (outputs.size() > 2 && outputs[2]) stats.inv_std_dev = outputs[2]->data<float>();
    if (n == 0) {
      // Statistics of empty rows are undefined; say so instead of leaving garbage.
      for (Tensor* stat :
           {outputs.size() > 1 ? outputs[1] : nullptr, outputs.size() > 2 ? outputs[2] : nullptr}) {
        if (stat) std::fill(stat->data<float>(), stat->data<float>() + stat->element_count(), NAN);
      }
      return Status::ok();
    }
    for (std::size_t i = 1; i < 3 && i < inputs.size(); ++i) {
      if (inputs[i] && inputs[i]->rank() > normalized_dims.size()) {
        return invalid_argument(
            where_, ": input ", i, " of shape ", dims_to_string(inputs[i]->dims()),
            " does not broadcast to the normalized shape ", dims_to_string(normalized_dims));
      }
    }
    std::vector<float> scale_storage, bias_storage;
    const float* scale = per_element(*inputs[1], normalized_dims, scale_storage);
    const float* bias = inputs.size() > 2 && inputs[2]
                            ? per_element(*inputs[2], normalized_dims, bias_storage)
                            : nullptr;
    const float* in = x.data<float>();
    float* out = outputs[0]->data<float>();
    if (!vectorized_) {
      reference_rows(in, out, rows, n, scale, bias, epsilon_, stats);
      return Status::ok();
    }
    context.pool->parallel_for(rows, task_grain(n), [&](std::int64_t begin, std::int64_t end) {
      Statistics part;
      if (stats.mean) part.mean = stats.mean + begin;
      if (stats.inv_std_dev) part.inv_std_dev = stats.inv_std_dev + begin;
      vectorized_rows(in + begin * n, out + begin * n, end - begin, n, scale, bias, epsilon_, part);
    });
    return Status::ok();
  }

 private:
  std::string where_;
  std::int64_t axis_;
  float epsilon_;
  bool vectorized_;
};

}  // namespace

bool layer_norm_supports(const ir::Node& node) {
  for (std::size_t i = 0; i < node.inputs.size() && i < 3; ++i) {
    if (node.inputs[i] && node.inputs[i]->dtype != DType::kF32) return false;
  }
  return node.input(0) && node.input(1) && node.output(0) &&
         node.attrs.get_int("stash_type", 1) == 1;
}

std::unique_ptr<Kernel> make_layer_norm_kernel(const ir::Node& node, TacticId tactic) {
  return std::make_unique<LayerNormKernel>(node, tactic == kVectorizedTactic);
}

}  // namespace voxrt::backends::cpu::reduction
