// Reference (tactic 0) kernels of Reduce* and ArgMax: one generic walk over every input element,
// accumulating in double (floats) or wrapping 64-bit integers. The test oracle: keep it plain.
#include <cmath>
#include <limits>

#include "backends/cpu/reduction/reduction_kernels.h"

namespace voxrt::backends::cpu::reduction {
namespace {

using ir::OpKind;

bool is_integer_capable(OpKind op) {
  return op == OpKind::kReduceSum || op == OpKind::kReduceMax || op == OpKind::kReduceMin ||
         op == OpKind::kReduceProd || op == OpKind::kArgMax;
}

// fn(input_index, output_index) for every input element; output_index counts the kept dims
// row-major, which is the output's layout whatever keepdims says.
template <typename Fn>
void for_each_element(const Dims& dims, const std::vector<bool>& reduced, Fn&& fn) {
  const std::int64_t count = element_count(dims);
  std::vector<std::int64_t> index(dims.size(), 0);
  for (std::int64_t flat = 0; flat < count; ++flat) {
    std::int64_t out = 0;
    for (std::size_t d = 0; d < dims.size(); ++d) {
      if (!reduced[d]) out = out * dims[d] + index[d];
    }
    fn(flat, out);
    for (std::size_t d = dims.size(); d-- > 0;) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
  }
}

void reduce_f32(OpKind op, const float* x, float* y, const Dims& dims,
                const std::vector<bool>& reduced, std::int64_t out_count,
                std::int64_t reduced_count) {
  const auto n = static_cast<std::size_t>(out_count);
  double init = 0.0;
  if (op == OpKind::kReduceMax || op == OpKind::kReduceLogSumExp) init = -INFINITY;
  if (op == OpKind::kReduceMin) init = INFINITY;
  if (op == OpKind::kReduceProd) init = 1.0;
  std::vector<double> acc(n, init);
  for_each_element(dims, reduced, [&](std::int64_t i, std::int64_t o) {
    const double v = x[i];
    double& a = acc[static_cast<std::size_t>(o)];
    switch (op) {
      case OpKind::kReduceMax:
      case OpKind::kReduceLogSumExp: a = std::max(a, v); break;
      case OpKind::kReduceMin: a = std::min(a, v); break;
      case OpKind::kReduceProd: a *= v; break;
      case OpKind::kReduceSumSquare:
      case OpKind::kReduceL2: a += v * v; break;
      default: a += v; break;
    }
  });
  if (op == OpKind::kReduceLogSumExp) {
    // log(sum(exp(x))) = max + log(sum(exp(x - max))), which cannot overflow.
    std::vector<double> sums(n, 0.0);
    for_each_element(dims, reduced, [&](std::int64_t i, std::int64_t o) {
      sums[static_cast<std::size_t>(o)] += std::exp(x[i] - acc[static_cast<std::size_t>(o)]);
    });
    for (std::size_t o = 0; o < n; ++o) {
      if (std::isfinite(acc[o])) acc[o] += std::log(sums[o]);
    }
  }
  for (std::size_t o = 0; o < n; ++o) {
    double v = acc[o];
    if (op == OpKind::kReduceMean) v /= static_cast<double>(reduced_count);
    if (op == OpKind::kReduceL2) v = std::sqrt(v);
    y[o] = static_cast<float>(v);
  }
}

template <typename T>
void reduce_integer(OpKind op, const T* x, T* y, const Dims& dims, const std::vector<bool>& reduced,
                    std::int64_t out_count) {
  // Unsigned arithmetic wraps like two's complement hardware instead of being undefined.
  std::uint64_t init = 0;
  if (op == OpKind::kReduceProd) init = 1;
  if (op == OpKind::kReduceMax)
    init = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::min());
  if (op == OpKind::kReduceMin)
    init = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  std::vector<std::uint64_t> acc(static_cast<std::size_t>(out_count), init);
  for_each_element(dims, reduced, [&](std::int64_t i, std::int64_t o) {
    std::uint64_t& a = acc[static_cast<std::size_t>(o)];
    const auto v = static_cast<std::int64_t>(x[i]);
    switch (op) {
      case OpKind::kReduceSum: a += static_cast<std::uint64_t>(v); break;
      case OpKind::kReduceProd: a *= static_cast<std::uint64_t>(v); break;
      case OpKind::kReduceMax:
        a = static_cast<std::uint64_t>(std::max(static_cast<std::int64_t>(a), v));
        break;
      default: a = static_cast<std::uint64_t>(std::min(static_cast<std::int64_t>(a), v)); break;
    }
  });
  for (std::size_t o = 0; o < acc.size(); ++o) {
    std::int64_t v = static_cast<std::int64_t>(acc[o]);
    // An empty Max/Min gives the type's extreme, as for floats (-inf / +inf).
    if (op == OpKind::kReduceMax) v = std::max<std::int64_t>(v, std::numeric_limits<T>::lowest());
    if (op == OpKind::kReduceMin) v = std::min<std::int64_t>(v, std::numeric_limits<T>::max());
    y[o] = static_cast<T>(v);
  }
}

template <typename T>
void arg_max(const T* x, std::int64_t* y, const BlockedLayout& layout, bool select_last_index) {
  for (std::int64_t o = 0; o < layout.outer; ++o) {
    for (std::int64_t i = 0; i < layout.inner; ++i) {
      const T* column = x + o * layout.reduce * layout.inner + i;
      T best = column[0];
      std::int64_t best_index = 0;
      for (std::int64_t r = 1; r < layout.reduce; ++r) {
        const T v = column[r * layout.inner];
        if (select_last_index ? v >= best : v > best) {
          best = v;
          best_index = r;
        }
      }
      y[o * layout.inner + i] = best_index;
    }
  }
}

class ReferenceReduceKernel final : public Kernel {
 public:
  explicit ReferenceReduceKernel(const ir::Node& node)
      : op_(node.op),
        where_(node.describe()),
        noop_with_empty_axes_(node.attrs.get_int("noop_with_empty_axes", 0) != 0),
        axis_(node.attrs.get_int("axis", 0)),
        select_last_index_(node.attrs.get_int("select_last_index", 0) != 0) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext&) const override {
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
    if (op_ == OpKind::kArgMax) {
      VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis, normalized_axis(where_, axis_, x.rank()));
      const BlockedLayout layout = single_axis_layout(x.dims(), axis);
      if (layout.reduce == 0) return invalid_argument(where_, ": ArgMax over an empty axis");
      std::int64_t* out = y.data<std::int64_t>();
      switch (x.dtype()) {
        case DType::kF32: arg_max(x.data<float>(), out, layout, select_last_index_); break;
        case DType::kI32: arg_max(x.data<std::int32_t>(), out, layout, select_last_index_); break;
        case DType::kI64: arg_max(x.data<std::int64_t>(), out, layout, select_last_index_); break;
        default: return unsupported(where_, ": ArgMax of ", dtype_name(x.dtype()));
      }
      return Status::ok();
    }
    const Tensor* axes = inputs.size() > 1 ? inputs[1] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(const std::vector<bool> reduced,
                           reduced_axes(where_, x.dims(), axes, noop_with_empty_axes_));
    std::int64_t out_count = 1, reduced_count = 1;
    for (std::size_t d = 0; d < x.rank(); ++d) (reduced[d] ? reduced_count : out_count) *= x.dim(d);
    if (y.element_count() != out_count) {
      return internal_error(where_, ": output has ", y.element_count(), " elements, expected ",
                            out_count);
    }
    switch (x.dtype()) {
      case DType::kF32:
        reduce_f32(op_, x.data<float>(), y.data<float>(), x.dims(), reduced, out_count,
                   reduced_count);
        break;
      case DType::kI32:
        reduce_integer(op_, x.data<std::int32_t>(), y.data<std::int32_t>(), x.dims(), reduced,
                       out_count);
        break;
      case DType::kI64:
        reduce_integer(op_, x.data<std::int64_t>(), y.data<std::int64_t>(), x.dims(), reduced,
                       out_count);
        break;
      default: return unsupported(where_, ": reduction of ", dtype_name(x.dtype()));
    }
    return Status::ok();
  }

 private:
  OpKind op_;
  std::string where_;
  bool noop_with_empty_axes_;
  std::int64_t axis_;
  bool select_last_index_;
};

}  // namespace

bool reduce_supports(const ir::Node& node) {
  const ir::Value* x = node.input(0);
  if (!x || node.outputs.empty() || !node.output(0)) return false;
  if (const ir::Value* axes = node.input(1);
      axes && axes->dtype != DType::kI64 && axes->dtype != DType::kI32) {
    return false;
  }
  if (x->dtype == DType::kF32) return true;
  return (x->dtype == DType::kI32 || x->dtype == DType::kI64) && is_integer_capable(node.op);
}

std::unique_ptr<Kernel> make_reference_reduce_kernel(const ir::Node& node) {
  return std::make_unique<ReferenceReduceKernel>(node);
}

}  // namespace voxrt::backends::cpu::reduction
