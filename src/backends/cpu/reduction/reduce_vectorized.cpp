// The vectorized tactic of Reduce* and ArgMax. Every reduction whose axes form one block is
// [outer, reduce, inner]: inner == 1 reduces contiguous rows (independent lanes per row),
// inner > 1 accumulates whole rows of `inner` elements into the output, which streams memory
// once in order. Rows or column blocks are spread over the pool. Reductions whose axes
// interleave with kept axes (rare in practice) run the reference kernel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "backends/cpu/reduction/reduction_kernels.h"
#include "backends/cpu/reduction/vector_math.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::reduction {
namespace {

using ir::OpKind;

// Column blocks of the inner > 1 case stay this small so the accumulators stay in L1.
constexpr std::int64_t kColumnBlock = 2048;

enum class Combine { kSum, kSumSquare, kMax, kMin, kProd };

template <typename T>
T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename T>
T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename T, Combine C>
constexpr T identity() {
  if constexpr (C == Combine::kProd) return T{1};
  if constexpr (C == Combine::kMax) {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  if constexpr (C == Combine::kMin) {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  return T{0};
}

// Folds one input element into a partial result.
template <typename T, Combine C>
inline T accumulate(T partial, T x) {
  if constexpr (C == Combine::kSum) return wrapping_add(partial, x);
  if constexpr (C == Combine::kSumSquare) return partial + x * x;
  if constexpr (C == Combine::kMax) return x > partial ? x : partial;
  if constexpr (C == Combine::kMin) return x < partial ? x : partial;
  if constexpr (C == Combine::kProd) return wrapping_mul(partial, x);
}

// Folds two partial results together.
template <typename T, Combine C>
inline T merge(T a, T b) {
  if constexpr (C == Combine::kSumSquare) return a + b;
  return accumulate<T, C>(a, b);
}

template <typename T, Combine C>
inline T reduce_row(const T* x, std::int64_t n) {
  T lanes[kLanes];
  for (T& lane : lanes) lane = identity<T, C>();
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = accumulate<T, C>(lanes[l], x[i + l]);
  }
  for (; i < n; ++i) lanes[0] = accumulate<T, C>(lanes[0], x[i]);
  for (int width = kLanes / 2; width > 0; width /= 2) {
    for (int l = 0; l < width; ++l) lanes[l] = merge<T, C>(lanes[l], lanes[l + width]);
  }
  return lanes[0];
}

// y[r] = reduction of row r, for `rows` contiguous rows of n elements.
template <typename T, Combine C>
void reduce_rows(const T* x, T* y, std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) y[r] = reduce_row<T, C>(x + r * n, n);
}

// acc[j] = fold of acc[j] and x[r * row_stride + j] over r < rows, j < n.
template <typename T, Combine C>
void accumulate_rows(T* acc, const T* x, std::int64_t rows, std::int64_t row_stride,
                     std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * row_stride;
    for (std::int64_t j = 0; j < n; ++j) acc[j] = accumulate<T, C>(acc[j], row[j]);
  }
}

template <typename T>
struct RowOps {
  void (*rows)(const T*, T*, std::int64_t, std::int64_t);
  void (*accumulate)(T*, const T*, std::int64_t, std::int64_t, std::int64_t);
};

// f32 entry points get an AVX2 clone; integer ones stay portable (shape-sized work).
#define VOXRT_F32_ROW_OPS(combine, suffix)                                                      \
  VOXRT_MULTIVERSION void reduce_rows_f32_##suffix(const float* x, float* y, std::int64_t rows, \
                                                   std::int64_t n) {                            \
    reduce_rows<float, Combine::combine>(x, y, rows, n);                                        \
  }                                                                                             \
  VOXRT_MULTIVERSION void accumulate_rows_f32_##suffix(                                         \
      float* acc, const float* x, std::int64_t rows, std::int64_t row_stride, std::int64_t n) { \
    accumulate_rows<float, Combine::combine>(acc, x, rows, row_stride, n);                      \
  }
VOXRT_F32_ROW_OPS(kSum, sum)
VOXRT_F32_ROW_OPS(kSumSquare, sum_square)
VOXRT_F32_ROW_OPS(kMax, max)
VOXRT_F32_ROW_OPS(kMin, min)
VOXRT_F32_ROW_OPS(kProd, prod)
#undef VOXRT_F32_ROW_OPS

VOXRT_MULTIVERSION float sum_exp_row(const float* x, std::int64_t n, float shift) {
  float lanes[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] += exp_approx(x[i + l] - shift);
  }
  for (; i < n; ++i) lanes[0] += exp_approx(x[i] - shift);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

VOXRT_MULTIVERSION void accumulate_exp_rows(float* acc, const float* x, const float* shift,
                                            std::int64_t rows, std::int64_t row_stride,
                                            std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = x + r * row_stride;
    for (std::int64_t j = 0; j < n; ++j) acc[j] += exp_approx(row[j] - shift[j]);
  }
}

template <typename T>
RowOps<T> row_ops(Combine combine) {
  if constexpr (std::is_same_v<T, float>) {
    switch (combine) {
      case Combine::kSum: return {reduce_rows_f32_sum, accumulate_rows_f32_sum};
      case Combine::kSumSquare: return {reduce_rows_f32_sum_square, accumulate_rows_f32_sum_square};
      case Combine::kMax: return {reduce_rows_f32_max, accumulate_rows_f32_max};
      case Combine::kMin: return {reduce_rows_f32_min, accumulate_rows_f32_min};
      case Combine::kProd: return {reduce_rows_f32_prod, accumulate_rows_f32_prod};
    }
  } else {
    switch (combine) {
      case Combine::kSum:
      case Combine::kSumSquare:
        return {reduce_rows<T, Combine::kSum>, accumulate_rows<T, Combine::kSum>};
      case Combine::kMax: return {reduce_rows<T, Combine::kMax>, accumulate_rows<T, Combine::kMax>};
      case Combine::kMin: return {reduce_rows<T, Combine::kMin>, accumulate_rows<T, Combine::kMin>};
      case Combine::kProd:
        return {reduce_rows<T, Combine::kProd>, accumulate_rows<T, Combine::kProd>};
    }
  }
  return {};
}

template <typename T>
T identity_of(Combine combine) {
  switch (combine) {
    case Combine::kSum:
    case Combine::kSumSquare: return identity<T, Combine::kSum>();
    case Combine::kMax: return identity<T, Combine::kMax>();
    case Combine::kMin: return identity<T, Combine::kMin>();
    case Combine::kProd: return identity<T, Combine::kProd>();
  }
  return T{};
}

Combine combine_for(OpKind op) {
  switch (op) {
    case OpKind::kReduceSumSquare:
    case OpKind::kReduceL2: return Combine::kSumSquare;
    case OpKind::kReduceMax:
    case OpKind::kReduceLogSumExp: return Combine::kMax;
    case OpKind::kReduceMin: return Combine::kMin;
    case OpKind::kReduceProd: return Combine::kProd;
    default: return Combine::kSum;
  }
}

// The step after the fold: Mean divides, L2 takes the root; LogSumExp is handled by its callers.
template <typename T>
void finish(OpKind op, T* y, std::int64_t n, std::int64_t reduced_count) {
  if constexpr (std::is_same_v<T, float>) {
    if (op == OpKind::kReduceMean) {
      const float scale = 1.0f / static_cast<float>(reduced_count);
      for (std::int64_t i = 0; i < n; ++i) y[i] *= scale;
    } else if (op == OpKind::kReduceL2) {
      for (std::int64_t i = 0; i < n; ++i) y[i] = std::sqrt(y[i]);
    }
  }
}

float log_sum_exp(float max, float sum_exp) {
  return std::isfinite(max) ? max + std::log(sum_exp) : max;
}

template <typename T>
void reduce_blocked(OpKind op, const T* x, T* y, const BlockedLayout& layout, ThreadPool& pool) {
  if (layout.outer * layout.inner == 0) return;
  const Combine combine = combine_for(op);
  const RowOps<T> ops = row_ops<T>(combine);
  const std::int64_t reduce = layout.reduce;
  const std::int64_t inner = layout.inner;
  if (inner == 1) {
    pool.parallel_for(layout.outer, task_grain(reduce), [&](std::int64_t begin, std::int64_t end) {
      ops.rows(x + begin * reduce, y + begin, end - begin, reduce);
      if constexpr (std::is_same_v<T, float>) {
        if (op == OpKind::kReduceLogSumExp) {
          for (std::int64_t r = begin; r < end; ++r) {
            y[r] = log_sum_exp(y[r], sum_exp_row(x + r * reduce, reduce, y[r]));
          }
        }
      }
      finish(op, y + begin, end - begin, reduce);
    });
    return;
  }
  std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  if (layout.outer * blocks < pool.threads()) {
    // Few, wide outputs: cut them finer so that every thread gets a share.
    blocks = std::max(blocks, std::min<std::int64_t>(pool.threads(), (inner + 255) / 256));
  }
  const std::int64_t tasks = layout.outer * blocks;
  pool.parallel_for(tasks, task_grain(reduce * inner / blocks),
                    [&](std::int64_t begin, std::int64_t end) {
                      std::vector<float> sums;
                      for (std::int64_t task = begin; task < end; ++task) {
                        const std::int64_t o = task / blocks;
                        const std::int64_t block = task % blocks;
                        const std::int64_t j0 = inner * block / blocks;
                        const std::int64_t width = inner * (block + 1) / blocks - j0;
                        T* acc = y + o * inner + j0;
                        const T* base = x + o * reduce * inner + j0;
                        std::fill(acc, acc + width, identity_of<T>(combine));
                        ops.accumulate(acc, base, reduce, inner, width);
                        if constexpr (std::is_same_v<T, float>) {
                          if (op == OpKind::kReduceLogSumExp) {
                            sums.assign(static_cast<std::size_t>(width), 0.0f);
                            accumulate_exp_rows(sums.data(), base, acc, reduce, inner, width);
                            for (std::int64_t j = 0; j < width; ++j)
                              acc[j] = log_sum_exp(acc[j], sums[static_cast<std::size_t>(j)]);
                          }
                        }
                        finish(op, acc, width, reduce);
                      }
                    });
}

template <typename T>
void arg_max_blocked(const T* x, std::int64_t* y, const BlockedLayout& layout,
                     bool select_last_index, ThreadPool& pool) {
  if (layout.outer * layout.inner == 0) return;
  const std::int64_t reduce = layout.reduce;
  const std::int64_t inner = layout.inner;
  if (inner == 1) {
    pool.parallel_for(layout.outer, task_grain(reduce), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t r = begin; r < end; ++r) {
        const T* row = x + r * reduce;
        // A vectorized max, then a scan for where it is: two cheap passes over a cached row.
        T best;
        if constexpr (std::is_same_v<T, float>) {
          reduce_rows_f32_max(row, &best, 1, reduce);
        } else {
          best = reduce_row<T, Combine::kMax>(row, reduce);
        }
        std::int64_t index = 0;
        if (select_last_index) {
          for (std::int64_t i = reduce; i-- > 0;) {
            if (row[i] == best) {
              index = i;
              break;
            }
          }
        } else {
          for (std::int64_t i = 0; i < reduce; ++i) {
            if (row[i] == best) {
              index = i;
              break;
            }
          }
        }
        y[r] = index;
      }
    });
    return;
  }
  const std::int64_t blocks = (inner + kColumnBlock - 1) / kColumnBlock;
  pool.parallel_for(
      layout.outer * blocks, task_grain(reduce * inner / blocks),
      [&](std::int64_t begin, std::int64_t end) {
        std::vector<T> best;
        for (std::int64_t task = begin; task < end; ++task) {
          const std::int64_t o = task / blocks;
          const std::int64_t block = task % blocks;
          const std::int64_t j0 = inner * block / blocks;
          const std::int64_t width = inner * (block + 1) / blocks - j0;
          const T* base = x + o * reduce * inner + j0;
          std::int64_t* index = y + o * inner + j0;
          best.assign(base, base + width);
          std::fill(index, index + width, 0);
          for (std::int64_t r = 1; r < reduce; ++r) {
            const T* row = base + r * inner;
            for (std::int64_t j = 0; j < width; ++j) {
              const T v = row[j];
              const bool take = select_last_index ? v >= best[static_cast<std::size_t>(j)]
                                                  : v > best[static_cast<std::size_t>(j)];
              best[static_cast<std::size_t>(j)] = take ? v : best[static_cast<std::size_t>(j)];
              index[j] = take ? r : index[j];
            }
          }
        }
      });
}

class VectorizedReduceKernel final : public Kernel {
 public:
  explicit VectorizedReduceKernel(const ir::Node& node)
      : op_(node.op),
        where_(node.describe()),
        noop_with_empty_axes_(node.attrs.get_int("noop_with_empty_axes", 0) != 0),
        axis_(node.attrs.get_int("axis", 0)),
        select_last_index_(node.attrs.get_int("select_last_index", 0) != 0),
        fallback_(make_reference_reduce_kernel(node)) {}

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& x = *inputs[0];
    Tensor& y = *outputs[0];
    if (op_ == OpKind::kArgMax) {
      VOXRT_ASSIGN_OR_RETURN(const std::int64_t axis, normalized_axis(where_, axis_, x.rank()));
      const BlockedLayout layout = single_axis_layout(x.dims(), axis);
      if (layout.reduce == 0) return invalid_argument(where_, ": ArgMax over an empty axis");
      if (y.element_count() != layout.outer * layout.inner) {
        return internal_error(where_, ": output has ", y.element_count(), " elements, expected ",
                              layout.outer * layout.inner);
      }
      std::int64_t* out = y.data<std::int64_t>();
      switch (x.dtype()) {
        case DType::kF32:
          arg_max_blocked(x.data<float>(), out, layout, select_last_index_, *context.pool);
          break;
        case DType::kI32:
          arg_max_blocked(x.data<std::int32_t>(), out, layout, select_last_index_, *context.pool);
          break;
        case DType::kI64:
          arg_max_blocked(x.data<std::int64_t>(), out, layout, select_last_index_, *context.pool);
          break;
        default: return unsupported(where_, ": ArgMax of ", dtype_name(x.dtype()));
      }
      return Status::ok();
    }
    const Tensor* axes = inputs.size() > 1 ? inputs[1] : nullptr;
    VOXRT_ASSIGN_OR_RETURN(const std::vector<bool> reduced,
                           reduced_axes(where_, x.dims(), axes, noop_with_empty_axes_));
    const std::optional<BlockedLayout> layout = blocked_layout(x.dims(), reduced);
    if (!layout) return fallback_->run(inputs, outputs, context);
    if (y.element_count() != layout->outer * layout->inner) {
      return internal_error(where_, ": output has ", y.element_count(), " elements, expected ",
                            layout->outer * layout->inner);
    }
    switch (x.dtype()) {
      case DType::kF32:
        reduce_blocked(op_, x.data<float>(), y.data<float>(), *layout, *context.pool);
        break;
      case DType::kI32:
        reduce_blocked(op_, x.data<std::int32_t>(), y.data<std::int32_t>(), *layout, *context.pool);
        break;
      case DType::kI64:
        reduce_blocked(op_, x.data<std::int64_t>(), y.data<std::int64_t>(), *layout, *context.pool);
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
  std::unique_ptr<Kernel> fallback_;
};

}  // namespace

std::unique_ptr<Kernel> make_vectorized_reduce_kernel(const ir::Node& node) {
  return std::make_unique<VectorizedReduceKernel>(node);
}

}  // namespace voxrt::backends::cpu::reduction
