// Ops whose output is a copy of the input bytes (Reshape, Flatten, Squeeze, Unsqueeze) or is made
// from dims and scalars (Shape, Size, ConstantOfShape, Range).
#include "backends/cpu/data_movement/data_movement_kernels.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

class CopyKernel final : public Kernel {
 public:
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    if (in.size_bytes() != out.size_bytes()) {
      return internal_error("copy kernel: input has ", in.size_bytes(), " bytes, output ",
                            out.size_bytes());
    }
    if (out.raw_data() != in.raw_data() && in.size_bytes()) {
      std::memcpy(out.raw_data(), in.raw_data(), in.size_bytes());
    }
    return Status::ok();
  }
};

class ShapeKernel final : public Kernel {
 public:
  explicit ShapeKernel(const ir::Node& node) : node_(detached_node(node)) {}
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Dims& dims = inputs[0]->dims();
    auto [begin, end] = ir::shape_op_range(node_, static_cast<std::int64_t>(dims.size()));
    if (outputs[0]->element_count() != end - begin) {
      return internal_error(node_.describe(), ": output has ", outputs[0]->element_count(),
                            " elements, expected ", end - begin);
    }
    auto* out = outputs[0]->data<std::int64_t>();
    for (std::int64_t i = begin; i < end; ++i) out[i - begin] = dims[static_cast<std::size_t>(i)];
    return Status::ok();
  }

 private:
  ir::Node node_;
};

class SizeKernel final : public Kernel {
 public:
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    *outputs[0]->data<std::int64_t>() = inputs[0]->element_count();
    return Status::ok();
  }
};

class ConstantOfShapeKernel final : public Kernel {
 public:
  explicit ConstantOfShapeKernel(const ir::Node& node) {
    if (const Tensor* value = node.attrs.get_tensor("value")) value_ = value->clone();
  }
  Status run(std::span<const Tensor* const>, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    Tensor& out = *outputs[0];
    if (!value_.is_valid()) {
      std::memset(out.raw_data(), 0, out.size_bytes());
      return Status::ok();
    }
    fill_elements(bytes_of(out), bytes_of(value_), dtype_size_bytes(value_.dtype()),
                  out.element_count());
    return Status::ok();
  }

 private:
  Tensor value_;
};

class RangeKernel final : public Kernel {
 public:
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    Tensor& out = *outputs[0];
    const std::int64_t count = out.element_count();
    switch (out.dtype()) {
      case DType::kF32: {
        // Accumulated, as onnxruntime does (and shape inference's data propagation).
        float value = inputs[0]->data<float>()[0];
        const float delta = inputs[2]->data<float>()[0];
        for (std::int64_t i = 0; i < count; ++i, value += delta) out.data<float>()[i] = value;
        return Status::ok();
      }
      case DType::kI32: fill<std::int32_t>(inputs, out); return Status::ok();
      case DType::kI64: fill<std::int64_t>(inputs, out); return Status::ok();
      default: break;
    }
    return unsupported("Range: dtype ", dtype_name(out.dtype()));
  }

 private:
  template <typename T>
  static void fill(std::span<const Tensor* const> inputs, Tensor& out) {
    const T start = inputs[0]->data<T>()[0];
    const T delta = inputs[2]->data<T>()[0];
    for (std::int64_t i = 0; i < out.element_count(); ++i) {
      out.data<T>()[i] = static_cast<T>(start + static_cast<T>(i) * delta);
    }
  }
};

}  // namespace

std::unique_ptr<Kernel> make_copy_kernel() {
  return std::make_unique<CopyKernel>();
}
std::unique_ptr<Kernel> make_shape_kernel(const ir::Node& node) {
  return std::make_unique<ShapeKernel>(node);
}
std::unique_ptr<Kernel> make_size_kernel() {
  return std::make_unique<SizeKernel>();
}
std::unique_ptr<Kernel> make_constant_of_shape_kernel(const ir::Node& node) {
  return std::make_unique<ConstantOfShapeKernel>(node);
}
std::unique_ptr<Kernel> make_range_kernel() {
  return std::make_unique<RangeKernel>();
}

}  // namespace voxrt::backends::cpu::data_movement
