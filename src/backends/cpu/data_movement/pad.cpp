// Pad (constant, edge, reflect; negative pads crop). Each output index maps, per axis, to an input
// index or to "constant". The blocked tactic precomputes those maps and copies each row's
// interior with one memcpy, filling only the borders element by element.
#include "backends/cpu/data_movement/data_movement_kernels.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

constexpr std::int64_t kConstant = -1;

// Input index read by output index `o` on an axis of input size `size` padded by `begin` before.
std::int64_t source_index(std::int64_t o, std::int64_t begin, std::int64_t size, ir::PadMode mode) {
  std::int64_t i = o - begin;
  if (i >= 0 && i < size) return i;
  switch (mode) {
    case ir::PadMode::kConstant: return kConstant;
    case ir::PadMode::kEdge: return i < 0 ? 0 : size - 1;
    case ir::PadMode::kReflect:
      if (size == 1) return 0;
      while (i < 0 || i >= size) i = i < 0 ? -i : 2 * (size - 1) - i;
      return i;
  }
  return kConstant;
}

class PadKernel final : public Kernel {
 public:
  PadKernel(const ir::Node& node, bool blocked) : node_(detached_node(node)), blocked_(blocked) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    const auto rank = static_cast<std::int64_t>(in.rank());
    VOXRT_ASSIGN_OR_RETURN(ir::PadMode mode, ir::pad_mode(node_));
    const std::vector<std::int64_t> axes =
        inputs.size() > 3 && inputs[3] ? inputs[3]->to_i64_vector() : std::vector<std::int64_t>{};
    VOXRT_ASSIGN_OR_RETURN(auto pads,
                           ir::resolve_pads(node_, rank, inputs[1]->to_i64_vector(), axes));
    for (std::int64_t d = 0; d < rank; ++d) {
      const std::int64_t expected = in.dim(static_cast<std::size_t>(d)) +
                                    pads[static_cast<std::size_t>(d)] +
                                    pads[static_cast<std::size_t>(d + rank)];
      if (expected != out.dim(static_cast<std::size_t>(d))) {
        return internal_error(node_.describe(), ": output dim ", d, " is ",
                              out.dim(static_cast<std::size_t>(d)), ", the pads give ", expected);
      }
    }
    if (out.element_count() == 0) return Status::ok();
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    std::vector<std::uint8_t> constant(element_bytes, 0);
    if (inputs.size() > 2 && inputs[2] && inputs[2]->element_count() > 0) {
      std::memcpy(constant.data(), inputs[2]->raw_data(), element_bytes);
    }
    if (in.element_count() == 0 && mode != ir::PadMode::kConstant) {
      return invalid_argument(node_.describe(), ": ",
                              mode == ir::PadMode::kEdge ? "edge" : "reflect",
                              " padding of an empty tensor");
    }
    if (blocked_) {
      run_blocked(in, out, pads, mode, constant.data(), context);
      return Status::ok();
    }
    const Dims in_strides = row_major_strides(in.dims());
    std::vector<std::int64_t> index;
    for (std::int64_t flat = 0; flat < out.element_count(); ++flat) {
      unravel_index(flat, out.dims(), index);
      std::int64_t offset = 0;
      bool inside = true;
      for (std::int64_t d = 0; d < rank && inside; ++d) {
        const auto du = static_cast<std::size_t>(d);
        const std::int64_t i = source_index(index[du], pads[du], in.dim(du), mode);
        inside = i != kConstant;
        offset += i * in_strides[du];
      }
      std::memcpy(bytes_of(out) + static_cast<std::size_t>(flat) * element_bytes,
                  inside ? bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes
                         : constant.data(),
                  element_bytes);
    }
    return Status::ok();
  }

 private:
  static void run_blocked(const Tensor& in, Tensor& out, const std::vector<std::int64_t>& pads,
                          ir::PadMode mode, const std::uint8_t* constant, KernelContext& context) {
    const std::size_t rank = in.rank();
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    if (rank == 0) {
      std::memcpy(out.raw_data(), in.raw_data(), element_bytes);
      return;
    }
    std::vector<std::vector<std::int64_t>> maps(rank);
    for (std::size_t d = 0; d < rank; ++d) {
      for (std::int64_t o = 0; o < out.dim(d); ++o)
        maps[d].push_back(source_index(o, pads[d], in.dim(d), mode));
    }
    const Dims in_strides = row_major_strides(in.dims());
    const Dims outer_dims(out.dims().begin(), out.dims().end() - 1);
    const std::int64_t width = out.dim(rank - 1);
    const std::int64_t in_width = in.dim(rank - 1);
    const std::int64_t begin_pad = pads[rank - 1];
    // Output columns [lo, hi) read input columns [lo - begin_pad, hi - begin_pad) in order.
    const std::int64_t lo = std::clamp<std::int64_t>(begin_pad, 0, width);
    const std::int64_t hi = std::clamp<std::int64_t>(begin_pad + in_width, lo, width);
    const std::size_t row_bytes = static_cast<std::size_t>(width) * element_bytes;
    parallel_rows(context, element_count(outer_dims), static_cast<std::int64_t>(row_bytes),
                  [&](std::int64_t begin, std::int64_t end) {
                    std::vector<std::int64_t> index;
                    for (std::int64_t row = begin; row < end; ++row) {
                      std::uint8_t* dst = bytes_of(out) + static_cast<std::size_t>(row) * row_bytes;
                      unravel_index(row, outer_dims, index);
                      std::int64_t offset = 0;
                      bool inside = true;
                      for (std::size_t d = 0; d + 1 < rank && inside; ++d) {
                        const std::int64_t i = maps[d][static_cast<std::size_t>(index[d])];
                        inside = i != kConstant;
                        offset += i * in_strides[d];
                      }
                      if (!inside) {
                        fill_elements(dst, constant, element_bytes, width);
                        continue;
                      }
                      const std::uint8_t* src =
                          bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes;
                      const auto copy_border = [&](std::int64_t from, std::int64_t to) {
                        for (std::int64_t o = from; o < to; ++o) {
                          const std::int64_t i = maps[rank - 1][static_cast<std::size_t>(o)];
                          std::memcpy(dst + static_cast<std::size_t>(o) * element_bytes,
                                      i == kConstant
                                          ? constant
                                          : src + static_cast<std::size_t>(i) * element_bytes,
                                      element_bytes);
                        }
                      };
                      copy_border(0, lo);
                      if (hi > lo) {
                        std::memcpy(dst + static_cast<std::size_t>(lo) * element_bytes,
                                    src + static_cast<std::size_t>(lo - begin_pad) * element_bytes,
                                    static_cast<std::size_t>(hi - lo) * element_bytes);
                      }
                      copy_border(hi, width);
                    }
                  });
  }

  ir::Node node_;
  bool blocked_;
};

}  // namespace

std::unique_ptr<Kernel> make_pad_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<PadKernel>(node, blocked);
}

}  // namespace voxrt::backends::cpu::data_movement
