// Slice and Gather. Both read input rows chosen per output index; the blocked tactics memcpy the
// longest contiguous run (trailing whole axes, plus a unit-step sliced axis).
#include "backends/cpu/data_movement/data_movement_kernels.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

std::vector<std::int64_t> optional_values(std::span<const Tensor* const> inputs, std::size_t i) {
  return i < inputs.size() && inputs[i] ? inputs[i]->to_i64_vector() : std::vector<std::int64_t>{};
}

class SliceKernel final : public Kernel {
 public:
  SliceKernel(const ir::Node& node, bool blocked) : node_(detached_node(node)), blocked_(blocked) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    VOXRT_ASSIGN_OR_RETURN(
        auto axes,
        ir::resolve_slice(node_, in.dims(), optional_values(inputs, 1), optional_values(inputs, 2),
                          optional_values(inputs, 3), optional_values(inputs, 4)));
    for (std::size_t d = 0; d < axes.size(); ++d) {
      if (axes[d].count != out.dim(d)) {
        return internal_error(node_.describe(), ": output dim ", d, " is ", out.dim(d),
                              ", the slice gives ", axes[d].count);
      }
    }
    if (out.element_count() == 0) return Status::ok();
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    const Dims in_strides = row_major_strides(in.dims());
    const std::size_t rank = in.rank();
    if (!blocked_) {
      std::vector<std::int64_t> index;
      for (std::int64_t flat = 0; flat < out.element_count(); ++flat) {
        unravel_index(flat, out.dims(), index);
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < rank; ++d)
          offset += (axes[d].start + index[d] * axes[d].step) * in_strides[d];
        std::memcpy(bytes_of(out) + static_cast<std::size_t>(flat) * element_bytes,
                    bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes, element_bytes);
      }
      return Status::ok();
    }
    // Trailing axes read whole are one contiguous block; a unit-step axis before them extends it.
    std::size_t outer_rank = rank;
    std::int64_t run = 1;
    while (outer_rank > 0) {
      const ir::SliceAxis& a = axes[outer_rank - 1];
      const std::int64_t dim = in.dim(outer_rank - 1);
      if (a.start == 0 && a.step == 1 && a.count == dim) {
        run *= dim;
        --outer_rank;
        continue;
      }
      if (a.step == 1) {
        run *= a.count;
        --outer_rank;
      }
      break;
    }
    const Dims outer_dims(out.dims().begin(),
                          out.dims().begin() + static_cast<std::ptrdiff_t>(outer_rank));
    std::int64_t base = 0;  // offset of the run's first element
    for (std::size_t d = outer_rank; d < rank; ++d) base += axes[d].start * in_strides[d];
    const std::size_t run_bytes = static_cast<std::size_t>(run) * element_bytes;
    parallel_rows(context, element_count(outer_dims), static_cast<std::int64_t>(run_bytes),
                  [&](std::int64_t begin, std::int64_t end) {
                    std::vector<std::int64_t> index;
                    for (std::int64_t row = begin; row < end; ++row) {
                      unravel_index(row, outer_dims, index);
                      std::int64_t offset = base;
                      for (std::size_t d = 0; d < outer_rank; ++d) {
                        offset += (axes[d].start + index[d] * axes[d].step) * in_strides[d];
                      }
                      std::memcpy(bytes_of(out) + static_cast<std::size_t>(row) * run_bytes,
                                  bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes,
                                  run_bytes);
                    }
                  });
    return Status::ok();
  }

 private:
  ir::Node node_;
  bool blocked_;
};

class GatherKernel final : public Kernel {
 public:
  GatherKernel(const ir::Node& node, bool blocked)
      : node_(detached_node(node)), axis_(node.attrs.get_int("axis", 0)), blocked_(blocked) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    const Tensor& indices = *inputs[1];
    Tensor& out = *outputs[0];
    const std::int64_t axis = axis_ < 0 ? axis_ + static_cast<std::int64_t>(in.rank()) : axis_;
    std::int64_t outer = 1, inner = 1;
    for (std::size_t i = 0; i < in.rank(); ++i) {
      if (static_cast<std::int64_t>(i) < axis) outer *= in.dim(i);
      if (static_cast<std::int64_t>(i) > axis) inner *= in.dim(i);
    }
    const std::int64_t axis_dim = in.dim(static_cast<std::size_t>(axis));
    const std::int64_t picks = indices.element_count();
    std::vector<std::int64_t> rows(static_cast<std::size_t>(picks));
    for (std::int64_t j = 0; j < picks; ++j) {
      std::int64_t index = indices.element_as_i64(j);
      if (index < -axis_dim || index >= axis_dim) {
        return out_of_range(node_.describe(), ": index ", index, " at position ", j,
                            " is out of range for axis ", axis, " of size ", axis_dim);
      }
      rows[static_cast<std::size_t>(j)] = index < 0 ? index + axis_dim : index;
    }
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    if (!blocked_) {
      for (std::int64_t o = 0; o < outer; ++o) {
        for (std::int64_t j = 0; j < picks; ++j) {
          for (std::int64_t i = 0; i < inner; ++i) {
            const std::int64_t src = (o * axis_dim + rows[static_cast<std::size_t>(j)]) * inner + i;
            const std::int64_t dst = (o * picks + j) * inner + i;
            std::memcpy(bytes_of(out) + static_cast<std::size_t>(dst) * element_bytes,
                        bytes_of(in) + static_cast<std::size_t>(src) * element_bytes,
                        element_bytes);
          }
        }
      }
      return Status::ok();
    }
    const std::size_t run_bytes = static_cast<std::size_t>(inner) * element_bytes;
    parallel_rows(context, outer * picks, static_cast<std::int64_t>(run_bytes),
                  [&](std::int64_t begin, std::int64_t end) {
                    for (std::int64_t item = begin; item < end; ++item) {
                      const std::int64_t o = item / picks;
                      const std::int64_t row = rows[static_cast<std::size_t>(item % picks)];
                      std::memcpy(
                          bytes_of(out) + static_cast<std::size_t>(item) * run_bytes,
                          bytes_of(in) + static_cast<std::size_t>(o * axis_dim + row) * run_bytes,
                          run_bytes);
                    }
                  });
    return Status::ok();
  }

 private:
  ir::Node node_;
  std::int64_t axis_;
  bool blocked_;
};

}  // namespace

std::unique_ptr<Kernel> make_slice_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<SliceKernel>(node, blocked);
}
std::unique_ptr<Kernel> make_gather_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<GatherKernel>(node, blocked);
}

}  // namespace voxrt::backends::cpu::data_movement
