// Softmax and LogSoftmax, both tactics. Opset < 13 flattens the input to 2-D at `axis` and
// normalizes whole rows; opset >= 13 normalizes along one axis. Both become [outer, n, inner].
// Both tactics subtract the maximum first, so large inputs cannot overflow exp.
#include <algorithm>
#include <cmath>

#include "backends/cpu/reduction/reduction_kernels.h"
#include "backends/cpu/reduction/vector_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::reduction {
namespace {

constexpr std::int64_t kColumnBlock = 1024;

struct SoftmaxParams {
  std::string where;
  bool log = false;
  bool flatten_to_2d = false;
  std::int64_t axis = -1;
};

Expected<BlockedLayout> softmax_layout(const SoftmaxParams& params, const Dims& dims) {
  VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis,
                         normalized_axis(params.where, params.axis, dims.size()));
  if (!params.flatten_to_2d) return single_axis_layout(dims, axis);
  BlockedLayout layout;
  layout.reduce = 1;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    (static_cast<std::int64_t>(d) < axis ? layout.outer : layout.reduce) *= dims[d];
  }
  return layout;
}

void reference_softmax(const SoftmaxParams& params, const float* x, float* y,
                       const BlockedLayout& layout) {
  const std::int64_t n = layout.reduce, inner = layout.inner;
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const float* in = x + o * n * inner + i;
      float* out = y + o * n * inner + i;
      double max = -INFINITY;
      for (std::int64_t r = 0; r < n; ++r) max = std::max(max, static_cast<double>(in[r * inner]));
      double sum = 0.0;
      for (std::int64_t r = 0; r < n; ++r) sum += std::exp(in[r * inner] - max);
      for (std::int64_t r = 0; r < n; ++r) {
        const double shifted = in[r * inner] - max;
        out[r * inner] =
            static_cast<float>(params.log ? shifted - std::log(sum) : std::exp(shifted) / sum);
      }
    }
  }
}

VOXRT_MULTIVERSION void softmax_rows(const float* x, float* y, std::int64_t rows, std::int64_t n,
                                     bool log) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const float max = row_max(in, n);
    float lanes[kLanes] = {};
    std::int64_t i = 0;
    if (log) {
      for (; i + kLanes <= n; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) lanes[l] += exp_approx(in[i + l] - max);
      }
      for (; i < n; ++i) lanes[0] += exp_approx(in[i] - max);
      // (x - max) - log(sum), not x - (max + log(sum)): x - max is exact for the large entries.
      const float log_sum = std::log(row_sum(lanes, kLanes));
      for (std::int64_t j = 0; j < n; ++j) out[j] = (in[j] - max) - log_sum;
    } else {
      for (; i + kLanes <= n; i += kLanes) {
        for (int l = 0; l < kLanes; ++l) {
          const float e = exp_approx(in[i + l] - max);
          out[i + l] = e;
          lanes[l] += e;
        }
      }
      for (; i < n; ++i) {
        out[i] = exp_approx(in[i] - max);
        lanes[0] += out[i];
      }
      const float scale = 1.0f / row_sum(lanes, kLanes);
      for (std::int64_t j = 0; j < n; ++j) out[j] *= scale;
    }
  }
}

// One block of `width` columns of an [n, inner] slab: the columns are normalized independently,
// reading whole rows so memory is walked in order. `max` and `sum` are scratch of `width`.
VOXRT_MULTIVERSION void softmax_columns(const float* x, float* y, std::int64_t n,
                                        std::int64_t inner, std::int64_t width, bool log,
                                        float* max, float* sum) {
  std::copy(x, x + width, max);
  for (std::int64_t r = 1; r < n; ++r) {
    const float* row = x + r * inner;
    for (std::int64_t j = 0; j < width; ++j) max[j] = row[j] > max[j] ? row[j] : max[j];
  }
  std::fill(sum, sum + width, 0.0f);
  for (std::int64_t r = 0; r < n; ++r) {
    const float* row = x + r * inner;
    float* out = y + r * inner;
    if (log) {
      for (std::int64_t j = 0; j < width; ++j) sum[j] += exp_approx(row[j] - max[j]);
    } else {
      for (std::int64_t j = 0; j < width; ++j) {
        const float e = exp_approx(row[j] - max[j]);
        out[j] = e;
        sum[j] += e;
      }
    }
  }
  if (log) {
    for (std::int64_t j = 0; j < width; ++j) sum[j] = std::log(sum[j]);
    for (std::int64_t r = 0; r < n; ++r) {
      const float* row = x + r * inner;
      float* out = y + r * inner;
      for (std::int64_t j = 0; j < width; ++j) out[j] = (row[j] - max[j]) - sum[j];
    }
  } else {
    for (std::int64_t j = 0; j < width; ++j) sum[j] = 1.0f / sum[j];
    for (std::int64_t r = 0; r < n; ++r) {
      float* out = y + r * inner;
      for (std::int64_t j = 0; j < width; ++j) out[j] *= sum[j];
    }
  }
}

void vectorized_softmax(const SoftmaxParams& params, const float* x, float* y,
                        const BlockedLayout& layout, ThreadPool& pool) {
  const std::int64_t n = layout.reduce, inner = layout.inner;
  if (inner == 1) {
    pool.parallel_for(layout.outer, task_grain(n), [&](std::int64_t begin, std::int64_t end) {
      softmax_rows(x + begin * n, y + begin * n, end - begin, n, params.log);
    });
    return;
  }
  const std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  pool.parallel_for(layout.outer * blocks, task_grain(n * inner / blocks),
                    [&](std::int64_t begin, std::int64_t end) {
                      std::vector<float> scratch;
                      for (std::int64_t task = begin; task < end; ++task) {
                        const std::int64_t o = task / blocks;
                        const std::int64_t block = task % blocks;
                        const std::int64_t j0 = inner * block / blocks;
                        const std::int64_t width = inner * (block + 1) / blocks - j0;
                        scratch.resize(2 * static_cast<std::size_t>(width));
                        const std::int64_t offset = o * n * inner + j0;
                        softmax_columns(x + offset, y + offset, n, inner, width, params.log,
                                        scratch.data(), scratch.data() + width);
                      }
                    });
}

class SoftmaxKernel final : public Kernel {
 public:
  SoftmaxKernel(SoftmaxParams params, bool vectorized)
      : params_(std::move(params)), vectorized_(vectorized) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
    VOXRT_ASSIGN_OR_RETURN(const BlockedLayout layout, softmax_layout(params_, x.dims()));
    if (y.element_count() != x.element_count()) {
      return internal_error(params_.where, ": output has ", y.element_count(), " elements, input ",
                            x.element_count());
    }
    if (x.element_count() == 0) return Status::ok();
    if (vectorized_) {
      vectorized_softmax(params_, x.data<float>(), y.data<float>(), layout, *context.pool);
    } else {
      reference_softmax(params_, x.data<float>(), y.data<float>(), layout);
    }
    return Status::ok();
  }

 private:
  SoftmaxParams params_;
  bool vectorized_;
};

}  // namespace

bool softmax_supports(const ir::Node& node) {
  return node.input(0) && node.input(0)->dtype == DType::kF32 && node.output(0);
}

std::unique_ptr<Kernel> make_softmax_kernel(const ir::Node& node, TacticId tactic) {
  SoftmaxParams params;
  params.where = node.describe();
  params.log = node.op == ir::OpKind::kLogSoftmax;
  params.flatten_to_2d = node.opset < 13;
  params.axis = node.attrs.get_int("axis", params.flatten_to_2d ? 1 : -1);
  return std::make_unique<SoftmaxKernel>(std::move(params), tactic == kVectorizedTactic);
}

}  // namespace voxrt::backends::cpu::reduction
