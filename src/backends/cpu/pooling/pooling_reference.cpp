// The pooling oracle: for every output position, walk every kernel tap and test it against the
// input bounds. Generic over the number of spatial axes; no precomputation.
#include <cstring>
#include <limits>

#include "backends/cpu/pooling/pooling_kernels.h"

namespace voxrt::backends::cpu::pooling {

namespace {

class ReferencePoolKernel final : public Kernel {
 public:
  explicit ReferencePoolKernel(const ir::Node& node) : is_max_(is_max_pool(node.op)) {
    node_.op = node.op;
    node_.name = node.name;
    node_.attrs = node.attrs;
    node_.opset = node.opset;
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& in = *inputs[0];
    Tensor* indices = outputs.size() > 1 ? outputs[1] : nullptr;
    if (indices && indices->dtype() != DType::kI64)
      return invalid_argument(node_.describe(), ": MaxPool Indices must be i64");
    switch (in.dtype()) {
      case DType::kF32: return run_typed<float>(in, *outputs[0], indices);
      case DType::kI8:
        if (is_max_) return run_typed<std::int8_t>(in, *outputs[0], indices);
        break;
      case DType::kU8:
        if (is_max_) return run_typed<std::uint8_t>(in, *outputs[0], indices);
        break;
      default: break;
    }
    return unsupported(node_.describe(),
                       ": the pooling reference takes f32 (MaxPool also i8, u8), found ",
                       dtype_name(in.dtype()));
  }

 private:
  // Indices (MaxPool's second output) are flat offsets into the whole input tensor, the
  // spatial part row-major (storage_order 0) or column-major (1), as onnxruntime computes them.
  template <typename T>
  Status run_typed(const Tensor& in, Tensor& out, Tensor* indices) const {
    VOXRT_ASSIGN_OR_RETURN(ir::PoolGeometry g, run_time_geometry(node_, in, out));
    const std::size_t n = g.input.size();
    const std::int64_t planes = in.dim(0) * in.dim(1);
    const std::int64_t in_plane = element_count(g.input);
    const std::int64_t out_plane = element_count(g.output);
    const std::int64_t taps = element_count(g.kernel);
    const bool column_major = node_.attrs.get_int("storage_order", 0) != 0;
    std::vector<std::int64_t> o_index(n), k_index(n), position(n);
    for (std::int64_t p = 0; p < planes; ++p) {
      const T* src = in.data<T>() + p * in_plane;
      T* dst = out.data<T>() + p * out_plane;
      for (std::int64_t o = 0; o < out_plane; ++o) {
        unravel(o, g.output, o_index);
        T best = std::numeric_limits<T>::lowest();
        std::int64_t best_index = -1;
        double sum = 0;
        std::int64_t valid = 0, padded = 0;
        for (std::int64_t k = 0; k < taps; ++k) {
          unravel(k, g.kernel, k_index);
          std::int64_t offset = 0;
          bool inside = true, inside_padding = true;
          for (std::size_t a = 0; a < n; ++a) {
            const std::int64_t pos =
                o_index[a] * g.strides[a] - g.pad_begin[a] + k_index[a] * g.dilations[a];
            inside = inside && pos >= 0 && pos < g.input[a];
            inside_padding =
                inside_padding && pos >= -g.pad_begin[a] && pos < g.input[a] + g.pad_end[a];
            offset = offset * g.input[a] + pos;
            position[a] = pos;
          }
          if (inside_padding) ++padded;
          if (!inside) continue;
          ++valid;
          if (best_index < 0 || src[offset] > best) {
            best = src[offset];
            best_index = offset;
            if (column_major) {
              best_index = 0;
              for (std::size_t a = n; a-- > 0;) best_index = best_index * g.input[a] + position[a];
            }
          }
          sum += static_cast<double>(src[offset]);
        }
        const std::int64_t divisor = g.count_include_pad ? padded : valid;
        if (is_max_) {
          dst[o] = best;
        } else {
          dst[o] = divisor ? static_cast<T>(sum / static_cast<double>(divisor)) : T(0);
        }
        if (indices) indices->data<std::int64_t>()[p * out_plane + o] = p * in_plane + best_index;
      }
    }
    return Status::ok();
  }

  static void unravel(std::int64_t flat, const std::vector<std::int64_t>& dims,
                      std::vector<std::int64_t>& index) {
    for (std::size_t d = dims.size(); d-- > 0;) {
      index[d] = flat % dims[d];
      flat /= dims[d];
    }
  }

  ir::Node node_;
  bool is_max_;
};

}  // namespace

std::unique_ptr<Kernel> make_reference_pool_kernel(const ir::Node& node) {
  return std::make_unique<ReferencePoolKernel>(node);
}

}  // namespace voxrt::backends::cpu::pooling
