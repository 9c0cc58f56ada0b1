// Transpose. The blocked tactic first drops unit dims and merges input axes that stay adjacent
// in the output, then either copies contiguous inner runs (the permutation keeps the last axis)
// or transposes 32x32 tiles between the output's last axis and the input's last axis.
#include "backends/cpu/data_movement/data_movement_kernels.h"
#include "ir/shape_inference/data_movement.h"

namespace voxrt::backends::cpu::data_movement {

namespace {

constexpr std::int64_t kTile = 32;

// Input dims and a permutation with unit dims dropped and adjacent-in-both axes merged.
struct SimplifiedTranspose {
  Dims in_dims;
  std::vector<std::int64_t> perm;
};

SimplifiedTranspose simplify(const Dims& dims, const std::vector<std::int64_t>& perm) {
  // Keep the non-unit axes, renumbered in input order.
  std::vector<std::int64_t> new_index(dims.size(), -1);
  Dims kept_dims;
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != 1) {
      new_index[i] = static_cast<std::int64_t>(kept_dims.size());
      kept_dims.push_back(dims[i]);
    }
  }
  std::vector<std::int64_t> kept_perm;
  for (std::int64_t p : perm) {
    if (new_index[static_cast<std::size_t>(p)] >= 0)
      kept_perm.push_back(new_index[static_cast<std::size_t>(p)]);
  }
  // Merge runs of output axes that read consecutive input axes.
  SimplifiedTranspose result;
  std::vector<std::vector<std::int64_t>> groups;  // input axes per merged output axis
  for (std::int64_t p : kept_perm) {
    if (!groups.empty() && groups.back().back() + 1 == p) {
      groups.back().push_back(p);
    } else {
      groups.push_back({p});
    }
  }
  // Order groups by their first input axis to get the merged input dims.
  std::vector<std::size_t> by_input(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) by_input[g] = g;
  std::sort(by_input.begin(), by_input.end(),
            [&](std::size_t a, std::size_t b) { return groups[a][0] < groups[b][0]; });
  std::vector<std::int64_t> merged_index(groups.size());
  for (std::size_t i = 0; i < by_input.size(); ++i) {
    std::int64_t size = 1;
    for (std::int64_t axis : groups[by_input[i]]) size *= kept_dims[static_cast<std::size_t>(axis)];
    result.in_dims.push_back(size);
    merged_index[by_input[i]] = static_cast<std::int64_t>(i);
  }
  for (std::size_t g = 0; g < groups.size(); ++g) result.perm.push_back(merged_index[g]);
  return result;
}

// out[r * out_row_stride + c] = in[r + c * col_in_stride] for rows [row_begin, row_end): rows run
// along the input's last (contiguous) axis, columns along the output's last axis.
template <typename T>
void transpose_rows(const T* in, T* out, std::int64_t cols, std::int64_t col_in_stride,
                    std::int64_t out_row_stride, std::int64_t row_begin, std::int64_t row_end) {
  for (std::int64_t cb = 0; cb < cols; cb += kTile) {
    const std::int64_t c_end = std::min(cols, cb + kTile);
    for (std::int64_t r = row_begin; r < row_end; ++r) {
      T* dst = out + r * out_row_stride;
      const T* src = in + r;
      for (std::int64_t c = cb; c < c_end; ++c) dst[c] = src[c * col_in_stride];
    }
  }
}

class TransposeKernel final : public Kernel {
 public:
  TransposeKernel(const ir::Node& node, bool blocked)
      : node_(detached_node(node)), blocked_(blocked) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    VOXRT_ASSIGN_OR_RETURN(auto perm,
                           ir::transpose_permutation(node_, static_cast<std::int64_t>(in.rank())));
    if (out.element_count() == 0) return Status::ok();
    if (!blocked_) return run_reference(in, out, perm);
    run_blocked(in, out, perm, context);
    return Status::ok();
  }

 private:
  static Status run_reference(const Tensor& in, Tensor& out,
                              const std::vector<std::int64_t>& perm) {
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    const Dims in_strides = row_major_strides(in.dims());
    std::vector<std::int64_t> index;
    for (std::int64_t flat = 0; flat < out.element_count(); ++flat) {
      unravel_index(flat, out.dims(), index);
      std::int64_t offset = 0;
      for (std::size_t d = 0; d < perm.size(); ++d) {
        offset += index[d] * in_strides[static_cast<std::size_t>(perm[d])];
      }
      std::memcpy(bytes_of(out) + static_cast<std::size_t>(flat) * element_bytes,
                  bytes_of(in) + static_cast<std::size_t>(offset) * element_bytes, element_bytes);
    }
    return Status::ok();
  }

  static void run_blocked(const Tensor& in, Tensor& out, const std::vector<std::int64_t>& perm,
                          KernelContext& context) {
    const std::size_t element_bytes = dtype_size_bytes(in.dtype());
    const SimplifiedTranspose s = simplify(in.dims(), perm);
    const std::size_t rank = s.in_dims.size();
    if (rank <= 1) {
      std::memcpy(out.raw_data(), in.raw_data(), in.size_bytes());
      return;
    }
    Dims out_dims;
    for (std::int64_t p : s.perm) out_dims.push_back(s.in_dims[static_cast<std::size_t>(p)]);
    const Dims in_strides = row_major_strides(s.in_dims);
    const Dims out_strides = row_major_strides(out_dims);
    if (s.perm[rank - 1] == static_cast<std::int64_t>(rank - 1)) {
      copy_runs(in, out, s, out_dims, in_strides, element_bytes, context);
      return;
    }
    // After merging, the last axes differ: output axis `rows_axis` reads the input's last axis.
    const auto last_in = static_cast<std::int64_t>(rank - 1);
    std::size_t rows_axis = 0;
    while (s.perm[rows_axis] != last_in) ++rows_axis;
    const std::size_t cols_axis = rank - 1;
    const std::int64_t rows = out_dims[rows_axis];
    const std::int64_t cols = out_dims[cols_axis];
    const std::int64_t col_in_stride = in_strides[static_cast<std::size_t>(s.perm[cols_axis])];
    // The other output axes form the outer loop.
    Dims outer_dims;
    std::vector<std::int64_t> outer_in_strides, outer_out_strides;
    for (std::size_t d = 0; d < rank; ++d) {
      if (d == rows_axis || d == cols_axis) continue;
      outer_dims.push_back(out_dims[d]);
      outer_in_strides.push_back(in_strides[static_cast<std::size_t>(s.perm[d])]);
      outer_out_strides.push_back(out_strides[d]);
    }
    const std::int64_t outer_count = element_count(outer_dims);
    const std::int64_t row_blocks = (rows + kTile - 1) / kTile;
    const auto task = [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int64_t> index;
      for (std::int64_t item = begin; item < end; ++item) {
        const std::int64_t outer = item / row_blocks;
        const std::int64_t block = item % row_blocks;
        unravel_index(outer, outer_dims, index);
        std::int64_t in_offset = 0, out_offset = 0;
        for (std::size_t d = 0; d < index.size(); ++d) {
          in_offset += index[d] * outer_in_strides[d];
          out_offset += index[d] * outer_out_strides[d];
        }
        const std::int64_t r0 = block * kTile;
        const std::int64_t r1 = std::min(rows, r0 + kTile);
        const std::int64_t out_row_stride = out_strides[rows_axis];
        switch (element_bytes) {
          case 1:
            tile<std::uint8_t>(in, out, in_offset, out_offset, cols, col_in_stride, out_row_stride,
                               r0, r1);
            break;
          case 2:
            tile<std::uint16_t>(in, out, in_offset, out_offset, cols, col_in_stride, out_row_stride,
                                r0, r1);
            break;
          case 4:
            tile<std::uint32_t>(in, out, in_offset, out_offset, cols, col_in_stride, out_row_stride,
                                r0, r1);
            break;
          default:
            tile<std::uint64_t>(in, out, in_offset, out_offset, cols, col_in_stride, out_row_stride,
                                r0, r1);
            break;
        }
      }
    };
    parallel_rows(context, outer_count * row_blocks,
                  kTile * cols * static_cast<std::int64_t>(element_bytes), task);
  }

  // The permutation keeps the last axis: every output row is one contiguous input run.
  static void copy_runs(const Tensor& in, Tensor& out, const SimplifiedTranspose& s,
                        const Dims& out_dims, const Dims& in_strides, std::size_t element_bytes,
                        KernelContext& context) {
    const std::size_t rank = out_dims.size();
    const std::int64_t run = out_dims[rank - 1];
    const std::size_t run_bytes = static_cast<std::size_t>(run) * element_bytes;
    const Dims outer_dims(out_dims.begin(), out_dims.end() - 1);
    const auto task = [&](std::int64_t begin, std::int64_t end) {
      std::vector<std::int64_t> index;
      for (std::int64_t row = begin; row < end; ++row) {
        unravel_index(row, outer_dims, index);
        std::int64_t in_offset = 0;
        for (std::size_t d = 0; d < index.size(); ++d) {
          in_offset += index[d] * in_strides[static_cast<std::size_t>(s.perm[d])];
        }
        std::memcpy(bytes_of(out) + static_cast<std::size_t>(row) * run_bytes,
                    bytes_of(in) + static_cast<std::size_t>(in_offset) * element_bytes, run_bytes);
      }
    };
    parallel_rows(context, element_count(outer_dims), static_cast<std::int64_t>(run_bytes), task);
  }

  template <typename T>
  static void tile(const Tensor& in, Tensor& out, std::int64_t in_offset, std::int64_t out_offset,
                   std::int64_t cols, std::int64_t col_in_stride, std::int64_t out_row_stride,
                   std::int64_t r0, std::int64_t r1) {
    transpose_rows<T>(in.data<T>() + in_offset, out.data<T>() + out_offset, cols, col_in_stride,
                      out_row_stride, r0, r1);
  }

  ir::Node node_;
  bool blocked_;
};

}  // namespace

std::unique_ptr<Kernel> make_transpose_kernel(const ir::Node& node, bool blocked) {
  return std::make_unique<TransposeKernel>(node, blocked);
}

}  // namespace voxrt::backends::cpu::data_movement
