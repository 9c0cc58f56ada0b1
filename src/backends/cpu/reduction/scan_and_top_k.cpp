// CumSum and TopK (reference tactic only), on f32, i32 and i64. Both walk the op's axis as
// [outer, n, inner]. TopK orders equal values by index, lowest first, as ONNX specifies.
#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "backends/cpu/reduction/reduction_kernels.h"

namespace voxrt::backends::cpu::reduction {
namespace {

template <typename T>
void cumsum(const T* x, T* y, const BlockedLayout& layout, bool exclusive, bool reverse) {
  const std::int64_t n = layout.reduce, inner = layout.inner;
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      T sum = T(0);
      for (std::int64_t step = 0; step < n; ++step) {
        const std::int64_t r = reverse ? n - 1 - step : step;
        const std::int64_t at = (o * n + r) * inner + i;
        if (exclusive) {
          y[at] = sum;
          sum = static_cast<T>(sum + x[at]);
        } else {
          sum = static_cast<T>(sum + x[at]);
          y[at] = sum;
        }
      }
    }
  }
}

class CumSumKernel final : public Kernel {
 public:
  explicit CumSumKernel(const ir::Node& node)
      : where_(node.describe()),
        exclusive_(node.attrs.get_int("exclusive", 0) != 0),
        reverse_(node.attrs.get_int("reverse", 0) != 0) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& x = *inputs[0];
    if (inputs[1]->element_count() != 1) return invalid_argument(where_, ": axis must be a scalar");
    VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis,
                           normalized_axis(where_, inputs[1]->element_as_i64(0), x.rank()));
    const BlockedLayout layout = single_axis_layout(x.dims(), axis);
    Tensor& y = *outputs[0];
    switch (x.dtype()) {
      case DType::kF32:
        cumsum(x.data<float>(), y.data<float>(), layout, exclusive_, reverse_);
        break;
      case DType::kI32:
        cumsum(x.data<std::int32_t>(), y.data<std::int32_t>(), layout, exclusive_, reverse_);
        break;
      case DType::kI64:
        cumsum(x.data<std::int64_t>(), y.data<std::int64_t>(), layout, exclusive_, reverse_);
        break;
      default: return unsupported(where_, ": CumSum of ", dtype_name(x.dtype()));
    }
    return Status::ok();
  }

 private:
  std::string where_;
  bool exclusive_;
  bool reverse_;
};

template <typename T>
void top_k(const T* x, T* values, std::int64_t* indices, const BlockedLayout& layout,
           std::int64_t k, bool largest) {
  const std::int64_t n = layout.reduce, inner = layout.inner;
  std::vector<std::int64_t> order(static_cast<std::size_t>(n));
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    for (std::int64_t i = 0; i < inner; ++i) {
      const T* row = x + o * n * inner + i;
      std::iota(order.begin(), order.end(), 0);
      auto before = [&](std::int64_t a, std::int64_t b) {
        const T va = row[a * inner], vb = row[b * inner];
        if (va != vb) return largest ? va > vb : va < vb;
        return a < b;
      };
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (std::int64_t r = 0; r < k; ++r) {
        const std::int64_t at = (o * k + r) * inner + i;
        values[at] = row[order[static_cast<std::size_t>(r)] * inner];
        indices[at] = order[static_cast<std::size_t>(r)];
      }
    }
  }
}

class TopKKernel final : public Kernel {
 public:
  explicit TopKKernel(const ir::Node& node)
      : where_(node.describe()),
        axis_(node.attrs.get_int("axis", -1)),
        largest_(node.attrs.get_int("largest", 1) != 0) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& x = *inputs[0];
    if (inputs[1]->element_count() != 1) return invalid_argument(where_, ": K must hold one value");
    VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis, normalized_axis(where_, axis_, x.rank()));
    const BlockedLayout layout = single_axis_layout(x.dims(), axis);
    const std::int64_t k = inputs[1]->element_as_i64(0);
    if (k < 0 || k > layout.reduce) {
      return invalid_argument(where_, ": K = ", k, " is outside [0, ", layout.reduce, "]");
    }
    Tensor& values = *outputs[0];
    std::int64_t* indices = outputs[1]->data<std::int64_t>();
    switch (x.dtype()) {
      case DType::kF32:
        top_k(x.data<float>(), values.data<float>(), indices, layout, k, largest_);
        break;
      case DType::kI32:
        top_k(x.data<std::int32_t>(), values.data<std::int32_t>(), indices, layout, k, largest_);
        break;
      case DType::kI64:
        top_k(x.data<std::int64_t>(), values.data<std::int64_t>(), indices, layout, k, largest_);
        break;
      default: return unsupported(where_, ": TopK of ", dtype_name(x.dtype()));
    }
    return Status::ok();
  }

 private:
  std::string where_;
  std::int64_t axis_;
  bool largest_;
};

}  // namespace

bool scan_and_top_k_supports(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || (x->dtype != DType::kF32 && x->dtype != DType::kI32 && x->dtype != DType::kI64))
    return false;
  // TopK needs both outputs written (the runtime allocates both).
  return node.op != ir::OpKind::kTopK || (node.output(0) && node.output(1));
}

std::unique_ptr<Kernel> make_scan_or_top_k_kernel(const ir::Node& node) {
  if (node.op == ir::OpKind::kTopK) return std::make_unique<TopKKernel>(node);
  return std::make_unique<CumSumKernel>(node);
}

}  // namespace voxrt::backends::cpu::reduction
