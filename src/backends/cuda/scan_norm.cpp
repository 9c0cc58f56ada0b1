// CumSum, TopK and InstanceNormalization on the device (scan_ops.cu), the reduction-family ops
// the Transformer-era exports add. CumSum's axis and TopK's K are read on the host when the plan
// is made (constants or shape arithmetic: DevTensor::host); they shape the launch.
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/launch_call.h"
#include "backends/cuda/scan_ops.h"

namespace voxrt::backends::cuda {
namespace {

struct Line {
  std::int64_t outer = 1, n = 1, inner = 1;
};

Expected<Line> line_along(const std::string& where, const Dims& dims, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(dims.size());
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<std::int64_t>(rank, 1))
    return invalid_argument(where, ": axis ", axis, " is out of range for rank ", rank);
  Line line;
  for (std::int64_t d = 0; d < rank; ++d) {
    const auto du = static_cast<std::size_t>(d);
    if (d < a) line.outer *= dims[du];
    if (d == a) line.n = dims[du];
    if (d > a) line.inner *= dims[du];
  }
  return line;
}

Expected<std::unique_ptr<CudaKernel>> make_cumsum(const ir::Node& node) {
  const ops::ElemType type = *elem_type_of(node.input(0)->dtype);
  const bool exclusive = node.attrs.get_int("exclusive", 0) != 0;
  const bool reverse = node.attrs.get_int("reverse", 0) != 0;
  const std::string where = node.describe();
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t> axis,
                           host_ints(inputs, 1, "CumSum's axis"));
    if (axis.size() != 1) return invalid_argument(where, ": axis must be a scalar");
    VOXRT_ASSIGN_OR_RETURN(const Line line, line_along(where, inputs[0].dims, axis[0]));
    return launch_call("CumSum", [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                     const CudaRunContext& context) {
      return ops::cumsum(type, in[0].data, out[0].data, line.outer, line.n, line.inner, exclusive,
                         reverse, context.stream);
    });
  });
}

Expected<std::unique_ptr<CudaKernel>> make_top_k(const ir::Node& node) {
  const ops::ElemType type = *elem_type_of(node.input(0)->dtype);
  const std::int64_t axis = node.attrs.get_int("axis", -1);
  const bool largest = node.attrs.get_int("largest", 1) != 0;
  const std::string where = node.describe();
  return make_function_kernel([=](std::span<const DevTensor> inputs, std::span<const DevTensor>)
                                  -> Expected<std::unique_ptr<CudaCall>> {
    VOXRT_ASSIGN_OR_RETURN(const std::vector<std::int64_t> k, host_ints(inputs, 1, "TopK's K"));
    if (k.size() != 1) return invalid_argument(where, ": K must hold one value");
    VOXRT_ASSIGN_OR_RETURN(const Line line, line_along(where, inputs[0].dims, axis));
    if (k[0] < 0 || k[0] > line.n)
      return invalid_argument(where, ": K = ", k[0], " is outside [0, ", line.n, "]");
    const std::int64_t count = k[0];
    return launch_call("TopK", [=](std::span<const DevTensor> in, std::span<const DevTensor> out,
                                   const CudaRunContext& context) {
      return ops::top_k(type, in[0].data, out[0].data, out[1].as<std::int64_t>(), line.outer,
                        line.n, line.inner, count, largest, context.stream);
    });
  });
}

Expected<std::unique_ptr<CudaKernel>> make_instance_norm(const ir::Node& node) {
  const float epsilon = node.attrs.get_float("epsilon", 1e-5f);
  const std::string where = node.describe();
  return make_function_kernel(
      [=](std::span<const DevTensor> inputs,
          std::span<const DevTensor>) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& x = inputs[0].dims;
        if (x.size() < 3) return invalid_argument(where, ": input must be [N, C, D1, ...]");
        const std::int64_t channels = x[1];
        if (inputs[1].count() != channels || inputs[2].count() != channels)
          return invalid_argument(where, ": scale and B must hold ", channels, " values");
        const std::int64_t slabs = x[0] * channels;
        const std::int64_t spatial = slabs == 0 ? 0 : element_count(x) / slabs;
        return launch_call("InstanceNormalization", [=](std::span<const DevTensor> in,
                                                        std::span<const DevTensor> out,
                                                        const CudaRunContext& context) {
          return ops::instance_norm(in[0].as<const float>(), in[1].as<const float>(),
                                    in[2].as<const float>(), out[0].as<float>(), slabs, channels,
                                    spatial, epsilon, context.stream);
        });
      });
}

}  // namespace

std::string scan_norm_unsupported(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || !node.output(0)) return "needs an input and an output";
  switch (node.op) {
    case ir::OpKind::kCumSum:
    case ir::OpKind::kTopK:
      if (x->dtype != DType::kF32 && x->dtype != DType::kI32 && x->dtype != DType::kI64)
        return str_cat(ir::op_name(node.op), " of ", dtype_name(x->dtype),
                       " (f32, i32 and i64 only)");
      if (node.inputs.size() < 2 || !node.input(1))
        return str_cat(ir::op_name(node.op), " needs its second input");
      if (node.op == ir::OpKind::kTopK && (node.outputs.size() < 2 || !node.output(1)))
        return "TopK's indices output must be there on the CUDA backend";
      return {};
    case ir::OpKind::kInstanceNormalization:
      for (std::size_t i = 0; i < 3; ++i)
        if (!node.input(i) || node.input(i)->dtype != DType::kF32)
          return "InstanceNormalization takes f32 input, scale and B";
      return {};
    default: break;
  }
  return str_cat("no CUDA kernel for ", ir::op_name(node.op));
}

Expected<std::unique_ptr<CudaKernel>> make_scan_norm_kernel(const ir::Node& node) {
  const std::string why = scan_norm_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (node.op) {
    case ir::OpKind::kCumSum: return make_cumsum(node);
    case ir::OpKind::kTopK: return make_top_k(node);
    default: return make_instance_norm(node);
  }
}

}  // namespace voxrt::backends::cuda
