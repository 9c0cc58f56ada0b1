// Concat and Split: along `axis`, each operand is a run of axis_dim * inner elements per outer
// index. The blocked tactic memcpys those runs; the reference copies one element at a time.
#include "backends/cpu/data_movement/data_movement_kernels.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

struct AxisSplit {
  std::int64_t outer = 1;
  std::int64_t inner = 1;
};

AxisSplit split_at(const Dims& dims, std::int64_t axis) {
  AxisSplit s;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<std::int64_t>(i) < axis) s.outer *= dims[i];
    if (static_cast<std::int64_t>(i) > axis) s.inner *= dims[i];
  }
  return s;
}

std::int64_t normalized(std::int64_t axis, std::size_t rank) {
  return axis < 0 ? axis + static_cast<std::int64_t>(rank) : axis;
}

// Copies between one "whole" tensor and its parts along an axis, in either direction.
void move_parts(std::uint8_t* whole, const Dims& whole_dims, std::int64_t axis,
                const std::vector<std::uint8_t*>& parts, const std::vector<std::int64_t>& part_axis,
                std::size_t element_bytes, bool to_whole, bool blocked, KernelContext& context) {
  const AxisSplit s = split_at(whole_dims, axis);
  const std::int64_t whole_axis = whole_dims[static_cast<std::size_t>(axis)];
  if (!blocked) {
    for (std::int64_t o = 0; o < s.outer; ++o) {
      std::int64_t axis_offset = 0;
      for (std::size_t p = 0; p < parts.size(); ++p) {
        for (std::int64_t a = 0; a < part_axis[p]; ++a) {
          for (std::int64_t i = 0; i < s.inner; ++i) {
            const std::int64_t whole_index = (o * whole_axis + axis_offset + a) * s.inner + i;
            const std::int64_t part_index = (o * part_axis[p] + a) * s.inner + i;
            std::uint8_t* w = whole + static_cast<std::size_t>(whole_index) * element_bytes;
            std::uint8_t* q = parts[p] + static_cast<std::size_t>(part_index) * element_bytes;
            if (to_whole) {
              std::memcpy(w, q, element_bytes);
            } else {
              std::memcpy(q, w, element_bytes);
            }
          }
        }
        axis_offset += part_axis[p];
      }
    }
    return;
  }
  const std::size_t whole_row_bytes =
      static_cast<std::size_t>(whole_axis * s.inner) * element_bytes;
  parallel_rows(context, s.outer, static_cast<std::int64_t>(whole_row_bytes),
                [&](std::int64_t begin, std::int64_t end) {
                  for (std::int64_t o = begin; o < end; ++o) {
                    std::uint8_t* w = whole + static_cast<std::size_t>(o) * whole_row_bytes;
                    for (std::size_t p = 0; p < parts.size(); ++p) {
                      const std::size_t run =
                          static_cast<std::size_t>(part_axis[p] * s.inner) * element_bytes;
                      std::uint8_t* q = parts[p] + static_cast<std::size_t>(o) * run;
                      if (run) {
                        if (to_whole) {
                          std::memcpy(w, q, run);
                        } else {
                          std::memcpy(q, w, run);
                        }
                      }
                      w += run;
                    }
                  }
                });
}

class ConcatKernel final : public Kernel {
 public:
  ConcatKernel(const ir::Node& node, bool blocked)
      : axis_(node.attrs.get_int("axis", 0)), blocked_(blocked) {}
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    Tensor& out = *outputs[0];
    const std::int64_t axis = normalized(axis_, out.rank());
    std::vector<std::uint8_t*> parts;
    std::vector<std::int64_t> part_axis;
    for (const Tensor* in : inputs) {
      // The bytes are only read when copying into the whole.
      parts.push_back(const_cast<std::uint8_t*>(bytes_of(*in)));
      part_axis.push_back(in->dim(static_cast<std::size_t>(axis)));
    }
    move_parts(bytes_of(out), out.dims(), axis, parts, part_axis, dtype_size_bytes(out.dtype()),
               true, blocked_, context);
    return Status::ok();
  }

 private:
  std::int64_t axis_;
  bool blocked_;
};

class SplitKernel final : public Kernel {
 public:
  SplitKernel(const ir::Node& node, bool blocked)
      : axis_(node.attrs.get_int("axis", 0)), blocked_(blocked) {}
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    const std::int64_t axis = normalized(axis_, in.rank());
    std::vector<std::uint8_t*> parts;
    std::vector<std::int64_t> part_axis;
    std::int64_t total = 0;
    for (Tensor* out : outputs) {
      if (!out) return unsupported("Split: omitted outputs are not supported");
      parts.push_back(bytes_of(*out));
      part_axis.push_back(out->dim(static_cast<std::size_t>(axis)));
      total += part_axis.back();
    }
    if (total != in.dim(static_cast<std::size_t>(axis))) {
      return internal_error("Split: outputs cover ", total, " of ",
                            in.dim(static_cast<std::size_t>(axis)), " along axis ", axis);
    }
    // The whole is only read when splitting.
    move_parts(const_cast<std::uint8_t*>(bytes_of(in)), in.dims(), axis, parts, part_axis,
               dtype_size_bytes(in.dtype()), false, blocked_, context);
    return Status::ok();
  }

 private:
  std::int64_t axis_;
  bool blocked_;
};

}  // namespace

std::unique_ptr<Kernel> make_concat_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<ConcatKernel>(node, blocked);
}
std::unique_ptr<Kernel> make_split_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<SplitKernel>(node, blocked);
}

}  // namespace voxrt::backends::cpu::data_movement
