// Ops made from dims and scalars: Shape, Size, ConstantOfShape, Range. When the plan is made the
// executor knows Shape's and Size's values (dims are host data) and any small result of the
// arithmetic on them, and folds those steps into plan constants; the kernels here run what is
// left (a Range of run-time length, a ConstantOfShape mask) and Shape/Size should a plan ever
// not fold them.
#include <cstring>

#include "backends/cuda/cuda_common.h"
#include "backends/cuda/launch_call.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cuda {
namespace {

// Writes values known at prepare time: they are uploaded once into a buffer of the call and
// copied device to device on each run (capturable, no host memory involved).
class DeviceValuesCall final : public CudaCall {
 public:
  explicit DeviceValuesCall(std::shared_ptr<DeviceBuffer> values) : values_(std::move(values)) {}
  Status enqueue(std::span<const DevTensor>, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    VOXRT_CUDA_TRY(cudaMemcpyAsync(out[0].data, values_->data(), out[0].bytes(),
                                   cudaMemcpyDeviceToDevice, context.stream));
    return Status::ok();
  }

 private:
  std::shared_ptr<DeviceBuffer> values_;
};

Expected<std::unique_ptr<CudaCall>> device_values_call(const std::vector<std::int64_t>& values) {
  VOXRT_ASSIGN_OR_RETURN(auto buffer,
                         DeviceBuffer::allocate(std::max<std::size_t>(values.size(), 1) * 8));
  VOXRT_CUDA_TRY(
      cudaMemcpy(buffer->data(), values.data(), values.size() * 8, cudaMemcpyHostToDevice));
  return std::unique_ptr<CudaCall>(new DeviceValuesCall(std::move(buffer)));
}

Expected<std::unique_ptr<CudaKernel>> make_shape(const ir::Node& node) {
  const ir::Node* n = &node;  // the graph outlives the engine's kernels
  return make_function_kernel(
      [n](std::span<const DevTensor> inputs,
          std::span<const DevTensor> outputs) -> Expected<std::unique_ptr<CudaCall>> {
        const Dims& dims = inputs[0].dims;
        std::vector<std::int64_t> values;
        if (n->op == ir::OpKind::kSize) {
          values.push_back(element_count(dims));
        } else {
          auto [begin, end] = ir::shape_op_range(*n, static_cast<std::int64_t>(dims.size()));
          for (std::int64_t i = begin; i < end; ++i)
            values.push_back(dims[static_cast<std::size_t>(i)]);
        }
        if (static_cast<std::int64_t>(values.size()) != outputs[0].count())
          return internal_error(n->describe(), ": ", values.size(), " values for an output of ",
                                outputs[0].count());
        return device_values_call(values);
      });
}

Expected<std::unique_ptr<CudaKernel>> make_constant_of_shape(const ir::Node& node) {
  std::uint64_t pattern = 0;
  int bytes = static_cast<int>(dtype_size_bytes(node.output(0)->dtype));
  if (const Tensor* value = node.attrs.get_tensor("value"); value && value->element_count() > 0) {
    bytes = static_cast<int>(dtype_size_bytes(value->dtype()));
    std::memcpy(&pattern, value->raw_data(), static_cast<std::size_t>(bytes));
  }
  return make_function_kernel(
      [pattern, bytes](std::span<const DevTensor>, std::span<const DevTensor>) {
        return launch_call("ConstantOfShape", [pattern, bytes](std::span<const DevTensor>,
                                                               std::span<const DevTensor> out,
                                                               const CudaRunContext& context) {
          return ops::fill(out[0].data, bytes, pattern, out[0].count(), context.stream);
        });
      });
}

Expected<std::unique_ptr<CudaKernel>> make_range(const ir::Node& node) {
  const ops::ElemType type = *elem_type_of(node.output(0)->dtype);
  return make_function_kernel([type](std::span<const DevTensor>, std::span<const DevTensor>) {
    return launch_call("Range", [type](std::span<const DevTensor> in,
                                       std::span<const DevTensor> out,
                                       const CudaRunContext& context) {
      return ops::range(type, in[0].data, in[2].data, out[0].data, out[0].count(), context.stream);
    });
  });
}

}  // namespace

std::string shape_op_unsupported(const ir::Node& node) {
  switch (node.op) {
    case ir::OpKind::kShape:
    case ir::OpKind::kSize: return {};
    case ir::OpKind::kConstantOfShape: {
      const Tensor* value = node.attrs.get_tensor("value");
      if (value && value->element_count() > 1) return "ConstantOfShape value must be one element";
      if (!node.output(0) || !elem_type_of(node.output(0)->dtype))
        return "ConstantOfShape of an unknown dtype";
      return {};
    }
    case ir::OpKind::kRange: {
      const DType t = node.output(0) ? node.output(0)->dtype : DType::kBool;
      if (t != DType::kF32 && t != DType::kI32 && t != DType::kI64)
        return str_cat("Range of ", dtype_name(t), " (f32, i32 and i64 only)");
      if (node.inputs.size() != 3 || !node.input(0) || !node.input(2))
        return "Range needs start, limit and delta";
      return {};
    }
    default: break;
  }
  return str_cat("no CUDA kernel for ", ir::op_name(node.op));
}

Expected<std::unique_ptr<CudaKernel>> make_shape_op_kernel(const ir::Node& node) {
  const std::string why = shape_op_unsupported(node);
  if (!why.empty()) return unsupported(node.describe(), ": ", why);
  switch (node.op) {
    case ir::OpKind::kConstantOfShape: return make_constant_of_shape(node);
    case ir::OpKind::kRange: return make_range(node);
    default: return make_shape(node);
  }
}

}  // namespace voxrt::backends::cuda
