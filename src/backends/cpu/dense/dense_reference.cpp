// Tactic 0 of the dense family: naive loops with double accumulation. Slow on purpose and kept
// forever as the oracle the other tactics are tested against.
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {

ir::Node detached_node(const ir::Node& node) {
  ir::Node copy;
  copy.op = node.op;
  copy.name = node.name;
  copy.attrs = node.attrs;
  copy.origin = node.origin;
  copy.opset = node.opset;
  return copy;
}

namespace {

class ConvReferenceKernel final : public Kernel {
 public:
  ConvReferenceKernel(ir::Node node, Activation activation)
      : node_(std::move(node)), activation_(activation) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const Tensor& w = *inputs[1];
    const Tensor* bias = inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(ir::ConvGeometry g,
                           ir::resolve_conv_geometry(node_, x.dims(), w.dims()));
    if (g.input.size() > 3) {
      return unsupported(node_.describe(),
                         ": the reference Conv handles 1 to 3 spatial dims, found ",
                         g.input.size());
    }
    // Pad every geometry to 3 spatial dims (leading extents of 1) so one loop nest serves all.
    const std::size_t missing = 3 - g.input.size();
    auto pad3 = [missing](const std::vector<std::int64_t>& v, std::int64_t fill) {
      std::vector<std::int64_t> out(missing, fill);
      out.insert(out.end(), v.begin(), v.end());
      return out;
    };
    const auto in = pad3(g.input, 1), kernel = pad3(g.kernel, 1), out = pad3(g.output, 1);
    const auto stride = pad3(g.strides, 1), dilation = pad3(g.dilations, 1),
               pad = pad3(g.pads_begin, 0);
    const std::int64_t group_in = g.in_channels / g.group, group_out = g.out_channels / g.group;
    const std::int64_t in_plane = in[0] * in[1] * in[2], out_plane = out[0] * out[1] * out[2];
    const std::int64_t kernel_volume = kernel[0] * kernel[1] * kernel[2];
    const float* xd = x.data<float>();
    const float* wd = w.data<float>();
    float* yd = outputs[0]->data<float>();
    const std::int64_t planes = g.batch * g.out_channels;
    context.pool->parallel_for(planes, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t plane = begin; plane < end; ++plane) {
        const std::int64_t n = plane / g.out_channels, oc = plane % g.out_channels;
        const std::int64_t first_ic = (oc / group_out) * group_in;
        for (std::int64_t od = 0; od < out[0]; ++od) {
          for (std::int64_t oh = 0; oh < out[1]; ++oh) {
            for (std::int64_t ow = 0; ow < out[2]; ++ow) {
              double acc = bias ? static_cast<double>(bias->data<float>()[oc]) : 0.0;
              for (std::int64_t ic = 0; ic < group_in; ++ic) {
                const float* xc = xd + (n * g.in_channels + first_ic + ic) * in_plane;
                const float* wc = wd + (oc * group_in + ic) * kernel_volume;
                for (std::int64_t kd = 0; kd < kernel[0]; ++kd) {
                  const std::int64_t id = od * stride[0] - pad[0] + kd * dilation[0];
                  if (id < 0 || id >= in[0]) continue;
                  for (std::int64_t kh = 0; kh < kernel[1]; ++kh) {
                    const std::int64_t ih = oh * stride[1] - pad[1] + kh * dilation[1];
                    if (ih < 0 || ih >= in[1]) continue;
                    for (std::int64_t kw = 0; kw < kernel[2]; ++kw) {
                      const std::int64_t iw = ow * stride[2] - pad[2] + kw * dilation[2];
                      if (iw < 0 || iw >= in[2]) continue;
                      acc += static_cast<double>(xc[(id * in[1] + ih) * in[2] + iw]) *
                             static_cast<double>(wc[(kd * kernel[1] + kh) * kernel[2] + kw]);
                    }
                  }
                }
              }
              yd[plane * out_plane + (od * out[1] + oh) * out[2] + ow] =
                  activation_value(activation_, static_cast<float>(acc));
            }
          }
        }
      }
    });
    return Status::ok();
  }

 private:
  ir::Node node_;
  Activation activation_;
};

class MatMulReferenceKernel final : public Kernel {
 public:
  MatMulReferenceKernel(ir::Node node, MatMulConfig config)
      : node_(std::move(node)), config_(config) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& a = *inputs[0];
    const Tensor& b = *inputs[1];
    const Tensor* c = config_.has_c && inputs.size() > 2 ? inputs[2] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(MatMulProblem p, plan_matmul(node_, config_, a.dims(), b.dims()));
    const float* ad = a.data<float>();
    const float* bd = b.data<float>();
    float* yd = outputs[0]->data<float>();
    if (c) {
      for (std::int64_t batch = 0; batch < p.batch_count; ++batch) {
        broadcast_c_into(*c, p.m, p.n, 0, p.m, 0, p.n, yd + batch * p.m * p.n, p.n);
      }
    }
    const std::int64_t rows = p.batch_count * p.m;
    context.pool->parallel_for(rows, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const std::int64_t batch = row / p.m, i = row % p.m;
        const float* ab = ad + p.a_offsets[static_cast<std::size_t>(batch)];
        const float* bb = bd + p.b_offsets[static_cast<std::size_t>(batch)];
        float* y = yd + row * p.n;
        for (std::int64_t j = 0; j < p.n; ++j) {
          double acc = 0.0;
          for (std::int64_t kk = 0; kk < p.k; ++kk) {
            const float av = p.trans_a ? ab[kk * p.lda + i] : ab[i * p.lda + kk];
            const float bv = p.trans_b ? bb[j * p.ldb + kk] : bb[kk * p.ldb + j];
            acc += static_cast<double>(av) * static_cast<double>(bv);
          }
          double value = static_cast<double>(config_.alpha) * acc;
          if (c) value += static_cast<double>(config_.beta) * static_cast<double>(y[j]);
          y[j] = activation_value(config_.activation, static_cast<float>(value));
        }
      }
    });
    return Status::ok();
  }

 private:
  ir::Node node_;
  MatMulConfig config_;
};

}  // namespace

Expected<std::unique_ptr<Kernel>> make_conv_reference_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(Activation activation, read_activation(node));
  return std::unique_ptr<Kernel>(new ConvReferenceKernel(detached_node(node), activation));
}

Expected<std::unique_ptr<Kernel>> make_matmul_reference_kernel(const ir::Node& node) {
  VOXRT_ASSIGN_OR_RETURN(MatMulConfig config, read_matmul_config(node));
  return std::unique_ptr<Kernel>(new MatMulReferenceKernel(detached_node(node), config));
}

}  // namespace voxrt::backends::cpu::dense
