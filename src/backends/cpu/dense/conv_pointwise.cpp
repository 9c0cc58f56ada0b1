// Pointwise 1-D Conv / FusedConv (kernel 1, stride 1, no padding, group 1) on AVX-512
// ("pointwise_avx512"): Conformer's convolution module opens and closes with one. Per image it is
// Y[O, T] = W[O, C] X[C, T]; with T small (a streaming chunk) the weights are the large operand,
// so the product runs as Y^T = X^T W^T over W^T packed once in panels (packed_panels.h): X read
// in place with a stride, Y written back channels-first, panels split over the pool.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/dense/dense_common.h"
#include "backends/cpu/dense/dense_kernels.h"
#include "backends/cpu/dense/packed_panels.h"
#include "core/thread_pool.h"
#include "ir/shape_inference/dense.h"

namespace voxrt::backends::cpu::dense {
namespace {

class PointwiseConvKernel final : public Kernel {
 public:
  PointwiseConvKernel(std::string where, Activation activation, PackedPanels weights_t)
      : where_(std::move(where)), activation_(activation), weights_t_(std::move(weights_t)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    const std::int64_t in_channels = weights_t_.k, out_channels = weights_t_.n;
    if (x.rank() != 3 || x.dim(1) != in_channels) {
      return invalid_argument(where_, ": X ", dims_to_string(x.dims()), " must be [N, ",
                              in_channels, ", T]");
    }
    const std::int64_t batch = x.dim(0), time = x.dim(2);
    Tensor& y = *outputs[0];
    if (y.element_count() != batch * out_channels * time) {
      return internal_error(where_, ": output ", dims_to_string(y.dims()), " is not [", batch, ", ",
                            out_channels, ", ", time, "]");
    }
    if (y.element_count() == 0) return Status::ok();
    const std::int64_t panels = weights_t_.panels();
    context.pool->parallel_for(batch * panels, 1, [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t task = begin; task < end; ++task) {
        const std::int64_t n = task / panels, p = task % panels;
        // Rows are time steps, depth is input channels, columns are output channels.
        const PanelProblem problem{x.data<float>() + n * in_channels * time,  1, time, time,
                                   y.data<float>() + n * out_channels * time, 1, time};
        run_panels(problem, weights_t_, activation_, p, p + 1);
      }
    });
    return Status::ok();
  }

 private:
  std::string where_;
  Activation activation_;
  PackedPanels weights_t_;  // W^T [C, O] in panels over O, and the bias
};

}  // namespace

bool conv_pointwise_applies(const ir::Node& node) {
  if (!cpu_has_avx512f() || !is_conv1d_with_constant_weights(node) ||
      node.input(1)->constant->dim(2) != 1)
    return false;
  auto attrs = ir::read_conv_attributes(node, 1);
  if (!attrs || attrs->group != 1 || attrs->auto_pad != "NOTSET") return false;
  auto ones = [](const std::vector<std::int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](std::int64_t e) { return e == 1; });
  };
  const bool unpadded =
      std::all_of(attrs->pads.begin(), attrs->pads.end(), [](std::int64_t e) { return e == 0; });
  return ones(attrs->strides) && ones(attrs->dilations) && unpadded;
}

Expected<std::unique_ptr<Kernel>> make_conv_pointwise_kernel(const ir::Node& node) {
  if (!conv_pointwise_applies(node)) {
    return unsupported(node.describe(),
                       ": pointwise_avx512 needs AVX-512 and a 1-D conv with constant weights "
                       "[O, C, 1], stride 1, no padding and group 1");
  }
  VOXRT_ASSIGN_OR_RETURN(const Activation activation, read_activation(node));
  const Tensor& w = *node.input(1)->constant;
  const ir::Value* b = node.input(2);
  // W [O, C] is B^T of the product: packed transposed, K = C, N = O.
  return std::unique_ptr<Kernel>(
      new PointwiseConvKernel(node.describe(), activation,
                              pack_panels(w.data<float>(), w.dim(1), w.dim(0), true, 1.0f,
                                          b ? b->constant->data<float>() : nullptr)));
}

}  // namespace voxrt::backends::cpu::dense
