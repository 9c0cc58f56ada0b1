// MaxPool, AveragePool, GlobalMaxPool and GlobalAveragePool on the device (f32, 1 or 2 spatial
// axes): the window geometry comes from ir::resolve_pool_geometry, the same computation shape
// inference and the CPU kernels use, so the device walks exactly the windows the CPU does.
#include "ir/shape_inference/pooling.h"
#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {
namespace {

bool is_max(ir::OpKind op) {
  return op == ir::OpKind::kMaxPool || op == ir::OpKind::kGlobalMaxPool;
}

class PoolCall final : public CudaCall {
 public:
  explicit PoolCall(const ops::Pool2d& shape) : shape_(shape) {}
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(
        ops::pool2d(shape_, in[0].as<const float>(), out[0].as<float>(), context.stream));
    return Status::ok();
  }

 private:
  ops::Pool2d shape_;
};

class PoolKernel final : public CudaKernel {
 public:
  explicit PoolKernel(const ir::Node& node) {
    node_.op = node.op;
    node_.name = node.name;
    node_.attrs = node.attrs;
    node_.opset = node.opset;
  }
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    const Dims& x = in[0].dims;
    if (x.size() < 3 || x.size() > 4 || out[0].dims.size() != x.size())
      return unsupported(node_.describe(), ": pooling over ", x.size() < 3 ? 0 : x.size() - 2,
                         " spatial axes (1 or 2 on the CUDA backend)");
    const std::vector<std::int64_t> spatial(x.begin() + 2, x.end());
    VOXRT_ASSIGN_OR_RETURN(ir::PoolGeometry g, ir::resolve_pool_geometry(node_, spatial));
    // 1-D pooling is 2-D with a height of 1: the geometry's axis 0 becomes w.
    const std::size_t w = spatial.size() - 1;
    const bool two_d = spatial.size() == 2;
    ops::Pool2d s;
    s.planes = x[0] * x[1];
    s.in_w = g.input[w];
    s.out_w = g.output[w];
    s.kernel_w = g.kernel[w];
    s.stride_w = g.strides[w];
    s.dilation_w = g.dilations[w];
    s.pad_w = g.pad_begin[w];
    s.pad_end_w = g.pad_end[w];
    if (two_d) {
      s.in_h = g.input[0];
      s.out_h = g.output[0];
      s.kernel_h = g.kernel[0];
      s.stride_h = g.strides[0];
      s.dilation_h = g.dilations[0];
      s.pad_h = g.pad_begin[0];
      s.pad_end_h = g.pad_end[0];
    }
    for (std::size_t a = 0; a < spatial.size(); ++a) {
      if (g.output[a] != out[0].dims[a + 2])
        return internal_error(node_.describe(), ": output ", dims_to_string(out[0].dims),
                              " does not match the pooling geometry (axis ", a, ")");
    }
    s.max = is_max(node_.op);
    s.count_include_pad = g.count_include_pad;
    return std::unique_ptr<CudaCall>(new PoolCall(s));
  }

 private:
  ir::Node node_;
};

}  // namespace

std::string pooling_unsupported(const ir::Node& node) {
  if (node.op != ir::OpKind::kMaxPool && node.op != ir::OpKind::kAveragePool &&
      node.op != ir::OpKind::kGlobalMaxPool && node.op != ir::OpKind::kGlobalAveragePool)
    return str_cat("no CUDA kernel for ", ir::op_name(node.op));
  if (!node.input(0) || node.input(0)->dtype != DType::kF32)
    return "pooling takes f32 only on the CUDA backend";
  if (node.output(1)) return "MaxPool's Indices output is not produced on the CUDA backend";
  const ir::Value* x = node.input(0);
  if (x->rank_known && (x->shape.size() < 3 || x->shape.size() > 4))
    return "pooling over 1 or 2 spatial axes only on the CUDA backend";
  return {};
}

Expected<std::unique_ptr<CudaKernel>> make_pooling_kernel(const ir::Node& node) {
  const std::string why = pooling_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  return std::unique_ptr<CudaKernel>(new PoolKernel(node));
}

}  // namespace voxrt::backends::cuda
