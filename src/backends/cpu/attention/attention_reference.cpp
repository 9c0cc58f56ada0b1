// The naive reference Attention kernel (tactic 0), the oracle of the faster tactics' tests: one
// query row at a time, every score kept, products and softmax statistics in double.
#include <cmath>
#include <limits>
#include <vector>

#include "backends/cpu/attention/attention_kernels.h"

namespace voxrt::backends::cpu::attention {
namespace {

class ReferenceAttentionKernel final : public Kernel {
 public:
  ReferenceAttentionKernel(std::string where, ir::AttentionParams params)
      : where_(std::move(where)), params_(params) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    VOXRT_ASSIGN_OR_RETURN(const AttentionRun run,
                           prepare_run(where_, params_, inputs, *outputs[0]));
    const ir::AttentionDims& d = run.dims;
    const std::int64_t group = d.kv_heads == 0 ? 1 : d.heads / d.kv_heads;
    std::vector<double> scores(static_cast<std::size_t>(d.kv_len));
    for (std::int64_t b = 0; b < d.batch; ++b) {
      for (std::int64_t h = 0; h < d.heads; ++h) {
        const std::int64_t kv_h = h / group;
        for (std::int64_t i = 0; i < d.q_len; ++i) {
          const float* q = run.q_data + run.q.offset(b, h, i);
          double max = -std::numeric_limits<double>::infinity();
          for (std::int64_t j = 0; j < d.kv_len; ++j) {
            const float* k = run.k_data + run.k.offset(b, kv_h, j);
            double dot = 0.0;
            for (std::int64_t c = 0; c < d.key_dim; ++c) dot += double(q[c]) * double(k[c]);
            double s = double(run.scale) * dot;
            if (run.bias) s += run.bias[run.bias_strides.offset(b, h, i, j)];
            if (run.float_mask) s += run.float_mask[run.mask.offset(b, h, i, j)];
            if (run.bool_mask && !run.bool_mask[run.mask.offset(b, h, i, j)]) s = params_.mask_fill;
            if (params_.causal && j > i + d.kv_len - d.q_len)
              s = -std::numeric_limits<double>::infinity();
            scores[static_cast<std::size_t>(j)] = s;
            max = std::max(max, s);
          }
          // max = -inf (every score -inf, or no keys) makes every term NaN, as Softmax gives.
          double sum = 0.0;
          for (double& s : scores) {
            s = std::exp(s - max);
            sum += s;
          }
          float* out = run.out_data + run.out.offset(b, h, i);
          for (std::int64_t c = 0; c < d.value_dim; ++c) {
            double acc = d.kv_len == 0 ? std::numeric_limits<double>::quiet_NaN() : 0.0;
            for (std::int64_t j = 0; j < d.kv_len; ++j)
              acc += scores[static_cast<std::size_t>(j)] * run.v_data[run.v.offset(b, kv_h, j) + c];
            out[c] = static_cast<float>(acc / sum);
          }
        }
      }
    }
    return Status::ok();
  }

 private:
  std::string where_;
  ir::AttentionParams params_;
};

}  // namespace

std::unique_ptr<Kernel> make_reference_attention_kernel(const ir::Node& node,
                                                        ir::AttentionParams params) {
  return std::make_unique<ReferenceAttentionKernel>(node.describe(), params);
}

}  // namespace voxrt::backends::cpu::attention
