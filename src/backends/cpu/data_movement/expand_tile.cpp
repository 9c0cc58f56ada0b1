// Expand (bidirectional broadcast to a shape) and Tile (repeat along each axis). Both read the
// output dims that shape inference gave. The blocked tactics copy the trailing contiguous block
// once per output row and replicate it by doubling memcpys.
#include "backends/cpu/data_movement/data_movement_kernels.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

// Input dims left-padded with 1s to the output rank.
Dims aligned_dims(const Tensor& in, std::size_t rank) {
  Dims dims(rank - in.rank(), 1);
  dims.insert(dims.end(), in.dims().begin(), in.dims().end());
  return dims;
}

class ReplicateKernel final : public Kernel {
 public:
  // is_tile: output index o reads input index o % in_dim; otherwise (Expand) broadcasting.
  ReplicateKernel(bool is_tile, bool blocked) : is_tile_(is_tile), blocked_(blocked) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    const std::size_t rank = out.rank();
    if (in.rank() > rank) {
      return internal_error("Expand/Tile: input rank ", in.rank(), " exceeds output rank ", rank);
    }
    const Dims in_dims = aligned_dims(in, rank);
    for (std::size_t d = 0; d < rank; ++d) {
      const bool ok = is_tile_ ? in_dims[d] != 0 && out.dim(d) % in_dims[d] == 0
                               : in_dims[d] == out.dim(d) || in_dims[d] == 1;
      if (!ok && out.element_count() != 0) {
        return internal_error("Expand/Tile: input ", dims_to_string(in.dims()),
                              " does not replicate to ", dims_to_string(out.dims()));
      }
    }
    if (out.element_count() == 0) return Status::ok();
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    const Dims in_strides = row_major_strides(in_dims);
    const auto source = [&](std::size_t d, std::int64_t o) {
      return is_tile_ ? o % in_dims[d] : (in_dims[d] == 1 ? 0 : o);
    };
    if (!blocked_) {
      std::vector<std::int64_t> index;
      for (std::int64_t flat = 0; flat < out.element_count(); ++flat) {
        unravel_index(flat, out.dims(), index);
        std::int64_t offset = 0;
        for (std::size_t d = 0; d < rank; ++d) offset += source(d, index[d]) * in_strides[d];
        std::memcpy(bytes_of(out) + static_cast<std::size_t>(flat) * element_bytes,
                    bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes, element_bytes);
      }
      return Status::ok();
    }
    // Trailing axes that are not replicated form one contiguous block.
    std::size_t axis = rank;
    std::int64_t block = 1;
    while (axis > 0 && in_dims[axis - 1] == out.dim(axis - 1)) block *= in_dims[--axis];
    if (axis == 0) {
      std::memcpy(out.raw_data(), in.raw_data(), out.size_bytes());
      return Status::ok();
    }
    // Axis `axis - 1` replicates: Expand repeats one block, Tile repeats in_dim blocks.
    const std::size_t r = axis - 1;
    const std::int64_t unit = is_tile_ ? in_dims[r] * block : block;
    const std::int64_t copies = is_tile_ ? out.dim(r) / in_dims[r] : out.dim(r);
    const std::size_t unit_bytes = static_cast<std::size_t>(unit) * element_bytes;
    const Dims outer_dims(out.dims().begin(), out.dims().begin() + static_cast<std::ptrdiff_t>(r));
    const std::size_t row_bytes = unit_bytes * static_cast<std::size_t>(copies);
    parallel_rows(context, element_count(outer_dims), static_cast<std::int64_t>(row_bytes),
                  [&](std::int64_t begin, std::int64_t end) {
                    std::vector<std::int64_t> index;
                    for (std::int64_t row = begin; row < end; ++row) {
                      unravel_index(row, outer_dims, index);
                      std::int64_t offset = 0;
                      for (std::size_t d = 0; d < r; ++d)
                        offset += source(d, index[d]) * in_strides[d];
                      fill_elements(bytes_of(out) + static_cast<std::size_t>(row) * row_bytes,
                                    bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes,
                                    unit_bytes, copies);
                    }
                  });
    return Status::ok();
  }

 private:
  bool is_tile_;
  bool blocked_;
};

}  // namespace

std::unique_ptr<Kernel> make_expand_kernel(bool blocked) {
  return std::make_unique<ReplicateKernel>(false, blocked);
}
std::unique_ptr<Kernel> make_tile_kernel(bool blocked) {
  return std::make_unique<ReplicateKernel>(true, blocked);
}

}  // namespace voxrt::backends::cpu::data_movement
