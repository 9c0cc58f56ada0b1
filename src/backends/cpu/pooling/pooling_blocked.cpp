// The fast pooling tactic: 1-D and 2-D pooling are run as 3-D with unit leading axes; per axis
// the valid taps of every output index are computed once, so the inner loops have no bounds
// tests; planes (N x C) are spread over the thread pool. With an undilated last axis, each
// output row's window rows are first reduced into one row.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <vector>

#include "backends/cpu/pooling/pooling_kernels.h"
#include "core/thread_pool.h"

namespace voxrt::backends::cpu::pooling {

namespace {

constexpr std::size_t kAxes = 3;

// Valid taps of one output index along one axis: input indices first, first + dilation, ...
struct AxisWindow {
  std::int64_t first = 0;
  std::int64_t taps = 0;
  // Taps inside input + explicit padding (AveragePool's count_include_pad divisor).
  std::int64_t padded_taps = 0;
};

std::vector<AxisWindow> axis_windows(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                     std::int64_t stride, std::int64_t dilation,
                                     std::int64_t pad_begin, std::int64_t pad_end) {
  std::vector<AxisWindow> windows(static_cast<std::size_t>(out));
  for (std::int64_t o = 0; o < out; ++o) {
    const std::int64_t origin = o * stride - pad_begin;
    AxisWindow w;
    bool found = false;
    for (std::int64_t k = 0; k < kernel; ++k) {
      const std::int64_t pos = origin + k * dilation;
      if (pos >= -pad_begin && pos < in + pad_end) ++w.padded_taps;
      if (pos < 0 || pos >= in) continue;
      if (!found) w.first = pos;
      found = true;
      ++w.taps;
    }
    windows[static_cast<std::size_t>(o)] = w;
  }
  return windows;
}

class BlockedPoolKernel final : public Kernel {
 public:
  explicit BlockedPoolKernel(const ir::Node& node) : is_max_(is_max_pool(node.op)) {
    node_.op = node.op;
    node_.name = node.name;
    node_.attrs = node.attrs;
    node_.opset = node.opset;
  }

  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    const Tensor& in = *inputs[0];
    Tensor& out = *outputs[0];
    VOXRT_ASSIGN_OR_RETURN(ir::PoolGeometry g, run_time_geometry(node_, in, out));
    const std::size_t n = g.input.size();
    if (n > kAxes) return unsupported(node_.describe(), ": more than 3 spatial axes");
    // Left-pad every axis list to three axes with unit extents.
    const std::size_t lead = kAxes - n;
    std::int64_t in_dims[kAxes], out_dims[kAxes], dilation[kAxes];
    std::vector<AxisWindow> windows[kAxes];
    for (std::size_t a = 0; a < kAxes; ++a) {
      if (a < lead) {
        in_dims[a] = out_dims[a] = dilation[a] = 1;
        windows[a] = {AxisWindow{0, 1, 1}};
        continue;
      }
      const std::size_t s = a - lead;
      in_dims[a] = g.input[s];
      out_dims[a] = g.output[s];
      dilation[a] = g.dilations[s];
      windows[a] = axis_windows(g.input[s], g.output[s], g.kernel[s], g.strides[s], g.dilations[s],
                                g.pad_begin[s], g.pad_end[s]);
    }
    const std::int64_t in_plane = in_dims[0] * in_dims[1] * in_dims[2];
    const std::int64_t out_plane = out_dims[0] * out_dims[1] * out_dims[2];
    const std::int64_t planes = in.dim(0) * in.dim(1);
    const std::int64_t row = in_dims[2];
    const std::int64_t slab = in_dims[1] * in_dims[2];
    const bool include_pad = g.count_include_pad;
    // Calls fn(first input element of the plane, w0, w1, output row) for every output row of
    // planes [begin, end).
    const auto for_each_output_row = [&](std::int64_t begin, std::int64_t end, auto&& fn) {
      for (std::int64_t p = begin; p < end; ++p) {
        const float* src = in.data<float>() + p * in_plane;
        float* out_row = out.data<float>() + p * out_plane;
        for (std::int64_t o0 = 0; o0 < out_dims[0]; ++o0) {
          const AxisWindow& w0 = windows[0][static_cast<std::size_t>(o0)];
          for (std::int64_t o1 = 0; o1 < out_dims[1]; ++o1, out_row += out_dims[2])
            fn(src, w0, windows[1][static_cast<std::size_t>(o1)], out_row);
        }
      }
    };
    const auto task = [&](std::int64_t begin, std::int64_t end) {
      for_each_output_row(
          begin, end,
          [&](const float* src, const AxisWindow& w0, const AxisWindow& w1, float* out_row) {
            for (std::int64_t o2 = 0; o2 < out_dims[2]; ++o2) {
              const AxisWindow& w2 = windows[2][static_cast<std::size_t>(o2)];
              float best = std::numeric_limits<float>::lowest();
              float sum = 0.0f;
              for (std::int64_t t0 = 0; t0 < w0.taps; ++t0) {
                const float* plane = src + (w0.first + t0 * dilation[0]) * slab;
                for (std::int64_t t1 = 0; t1 < w1.taps; ++t1) {
                  const float* line = plane + (w1.first + t1 * dilation[1]) * row + w2.first;
                  if (is_max_) {
                    for (std::int64_t t2 = 0; t2 < w2.taps; ++t2)
                      best = std::max(best, line[t2 * dilation[2]]);
                  } else {
                    for (std::int64_t t2 = 0; t2 < w2.taps; ++t2) sum += line[t2 * dilation[2]];
                  }
                }
              }
              if (is_max_) {
                out_row[o2] = best;
              } else {
                const std::int64_t divisor = include_pad
                                                 ? w0.padded_taps * w1.padded_taps * w2.padded_taps
                                                 : w0.taps * w1.taps * w2.taps;
                out_row[o2] = divisor ? sum / static_cast<float>(divisor) : 0.0f;
              }
            }
          });
    };
    // Undilated last axis (nearly every real pool): reduce the window's whole input rows into
    // one row first (contiguous, vectorized), then each output reads its taps from that row.
    // A 2x2/2 max pool then costs about one vector max per input element instead of a short,
    // data-dependent loop per output.
    //
    // Outputs [pair_begin, pair_end) of the last axis read taps 2*o - pad and 2*o - pad + 1,
    // both inside the input (kernel 2, stride 2: the usual downsampling pool): four of them are
    // made at once from two loads, splitting even and odd taps with a shuffle.
    std::int64_t pair_begin = 0, pair_end = 0;
    if (n > 0 && g.kernel[n - 1] == 2 && g.strides[n - 1] == 2) {
      const auto& w = windows[2];
      const auto regular = [&](std::int64_t o) {
        const AxisWindow& window = w[static_cast<std::size_t>(o)];
        return window.taps == 2 && window.first == 2 * o - g.pad_begin[n - 1];
      };
      while (pair_begin < out_dims[2] && !regular(pair_begin)) ++pair_begin;
      pair_end = pair_begin;
      while (pair_end < out_dims[2] && regular(pair_end)) ++pair_end;
    }
    const std::int64_t pad_last = n > 0 ? g.pad_begin[n - 1] : 0;
    const auto rows_first_task = [&](std::int64_t begin, std::int64_t end) {
      std::vector<float> reduced(static_cast<std::size_t>(row));
      float* acc = reduced.data();
      for_each_output_row(
          begin, end,
          [&](const float* src, const AxisWindow& w0, const AxisWindow& w1, float* out_row) {
            // Starting from lowest (max) or 0 (sum) keeps the per-output path's results, NaN
            // handling included (std::max keeps its first argument when either is NaN).
            std::fill(acc, acc + row, is_max_ ? std::numeric_limits<float>::lowest() : 0.0f);
            for (std::int64_t t0 = 0; t0 < w0.taps; ++t0) {
              const float* plane = src + (w0.first + t0 * dilation[0]) * slab;
              for (std::int64_t t1 = 0; t1 < w1.taps; ++t1) {
                const float* line = plane + (w1.first + t1 * dilation[1]) * row;
                if (is_max_) {
                  for (std::int64_t x = 0; x < row; ++x) acc[x] = std::max(acc[x], line[x]);
                } else {
                  for (std::int64_t x = 0; x < row; ++x) acc[x] += line[x];
                }
              }
            }
            const std::int64_t divisor_rows =
                include_pad ? w0.padded_taps * w1.padded_taps : w0.taps * w1.taps;
            const auto one_at_a_time = [&](std::int64_t from, std::int64_t to) {
              for (std::int64_t o2 = from; o2 < to; ++o2) {
                const AxisWindow& w2 = windows[2][static_cast<std::size_t>(o2)];
                const float* taps = acc + w2.first;
                if (is_max_) {
                  float best = std::numeric_limits<float>::lowest();
                  for (std::int64_t t2 = 0; t2 < w2.taps; ++t2) best = std::max(best, taps[t2]);
                  out_row[o2] = best;
                } else {
                  float sum = 0.0f;
                  for (std::int64_t t2 = 0; t2 < w2.taps; ++t2) sum += taps[t2];
                  const std::int64_t divisor =
                      divisor_rows * (include_pad ? w2.padded_taps : w2.taps);
                  out_row[o2] = divisor ? sum / static_cast<float>(divisor) : 0.0f;
                }
              }
            };
            // acc holds no NaN (std::max dropped them) and nothing below lowest, so the max of two
            // taps is _mm_max_ps's, and their sum is 0 + a + b.
            std::int64_t pairs_done = pair_begin;
            if (is_max_ || divisor_rows > 0) {
              const __m128 divisor = _mm_set1_ps(static_cast<float>(divisor_rows * 2));
              for (; pairs_done + 4 <= pair_end; pairs_done += 4) {
                const float* taps = acc + 2 * pairs_done - pad_last;
                const __m128 low = _mm_loadu_ps(taps);
                const __m128 high = _mm_loadu_ps(taps + 4);
                const __m128 even = _mm_shuffle_ps(low, high, _MM_SHUFFLE(2, 0, 2, 0));
                const __m128 odd = _mm_shuffle_ps(low, high, _MM_SHUFFLE(3, 1, 3, 1));
                _mm_storeu_ps(
                    out_row + pairs_done,
                    is_max_ ? _mm_max_ps(even, odd) : _mm_div_ps(_mm_add_ps(even, odd), divisor));
              }
            }
            one_at_a_time(0, pair_begin);
            one_at_a_time(pairs_done, out_dims[2]);
          });
    };
    const std::int64_t taps_per_output = element_count(g.kernel);
    const std::int64_t work_per_plane =
        std::max<std::int64_t>(1, out_plane * std::max<std::int64_t>(taps_per_output, 1));
    const std::int64_t grain = std::max<std::int64_t>(1, 16384 / work_per_plane);
    if (dilation[2] == 1) {
      context.pool->parallel_for(planes, grain, rows_first_task);
    } else {
      context.pool->parallel_for(planes, grain, task);
    }
    return Status::ok();
  }

 private:
  ir::Node node_;
  bool is_max_;
};

}  // namespace

std::unique_ptr<Kernel> make_blocked_pool_kernel(const ir::Node& node) {
  return std::make_unique<BlockedPoolKernel>(node);
}

}  // namespace voxrt::backends::cpu::pooling
