#include "backends/cuda/conv_width_fold.h"

#include <algorithm>
#include <limits>

namespace voxrt::backends::cuda {

ops::FastDivisor make_fast_divisor(int d) {
  ops::FastDivisor f;
  if (d < 1) return f;  // a plan with no outputs divides by nothing
  int log2_ceil = 0;
  while ((std::int64_t{1} << log2_ceil) < d) ++log2_ceil;
  f.divisor = d;
  f.shift = 31 + log2_ceil;
  const std::uint64_t power = std::uint64_t{1} << f.shift;
  f.multiplier = static_cast<unsigned>((power + static_cast<std::uint64_t>(d) - 1) /
                                       static_cast<std::uint64_t>(d));
  return f;
}

ops::WidthFold width_fold_plan(const WidthFoldConv& c, int tile_w) {
  ops::WidthFold f;
  auto i = [](std::int64_t v) { return static_cast<int>(v); };
  f.batch = i(c.batch);
  f.channels = i(c.channels);
  f.height = i(c.height);
  f.width = i(c.width);
  f.out_channels = i(c.out_channels);
  f.kernel_h = i(c.kernel_h);
  f.kernel_w = i(c.kernel_w);
  f.out_h = i(c.out_h);
  f.out_w = i(c.out_w);
  f.stride_h = i(c.stride_h);
  f.stride_w = i(c.stride_w);
  f.pad_top = i(c.pad_top);
  f.pad_bottom = i(c.pad_bottom);
  f.pad_left = i(c.pad_left);
  f.dilation_h = i(c.dilation_h);
  f.dilation_w = i(c.dilation_w);
  if (c.out_w <= 0 || tile_w <= 0) return f;
  f.tile_w = static_cast<int>(std::min<std::int64_t>(tile_w, c.out_w));
  f.tiles = static_cast<int>((c.out_w + f.tile_w - 1) / f.tile_w);
  const std::int64_t span = (f.tile_w - 1) * c.stride_w + (c.kernel_w - 1) * c.dilation_w + 1;
  std::int64_t window = span;
  std::int64_t start = -c.pad_left;
  if (f.tiles == 1) {
    // Only the in-image columns: the padding would only meet zeros.
    const std::int64_t first = std::max<std::int64_t>(start, 0);
    const std::int64_t end = std::min<std::int64_t>(start + span, c.width);
    start = first;
    window = std::max<std::int64_t>(end - first, 1);
  }
  while ((c.channels * window) % 8 != 0) ++window;
  f.window = static_cast<int>(window);
  f.window_start = static_cast<int>(start);
  f.by_folded_channels = make_fast_divisor(f.folded_channels());
  f.by_height = make_fast_divisor(f.height);
  f.by_tiles = make_fast_divisor(f.tiles);
  f.by_window = make_fast_divisor(f.window);
  f.by_out_w = make_fast_divisor(f.out_w);
  f.by_out_h = make_fast_divisor(f.out_h);
  f.by_out_channels = make_fast_divisor(f.out_channels);
  f.by_tile_w = make_fast_divisor(f.tile_w);
  f.by_kernel_h = make_fast_divisor(f.kernel_h);
  f.by_plane = make_fast_divisor(f.out_h * f.out_w);
  f.by_chunks8 = make_fast_divisor(f.folded_channels() / 8);
  f.by_chunks4 = make_fast_divisor(f.folded_channels() / 4);
  return f;
}

double width_fold_work_ratio(const ops::WidthFold& f) {
  if (f.out_w <= 0 || f.kernel_w <= 0) return std::numeric_limits<double>::infinity();
  return static_cast<double>(f.window) * f.tiles * f.tile_w /
         (static_cast<double>(f.kernel_w) * f.out_w);
}

bool width_fold_applies(const WidthFoldConv& c, int tile_w, int gemm_element_bytes) {
  if (c.batch <= 0 || c.channels <= 0 || c.out_channels <= 0 || c.out_h <= 0 || c.out_w <= 0 ||
      c.width <= 0 || c.height <= 0 || c.pad_top != c.pad_bottom)
    return false;
  // Before the 32-bit plan: every count in 64 bits.
  constexpr std::int64_t kMax32 = std::numeric_limits<int>::max();
  if (c.batch * c.channels * c.height * c.width > kMax32 ||
      c.batch * c.out_channels * c.out_h * c.out_w > kMax32 || c.kernel_w <= 0 || c.stride_w <= 0 ||
      c.dilation_w <= 0 || c.out_w > kMax32 / c.stride_w)
    return false;
  // A window is at most a tile's span plus the alignment columns.
  const std::int64_t tile = std::min<std::int64_t>(tile_w, c.out_w);
  const std::int64_t span = (tile - 1) * c.stride_w + (c.kernel_w - 1) * c.dilation_w + 1;
  if (c.channels * (span + 7) > kWidthFoldMaxChannels) return false;
  const ops::WidthFold f = width_fold_plan(c, tile_w);
  if (f.tiles <= 0) return false;
  const std::int64_t folded_filter =
      std::int64_t{f.folded_out_channels()} * f.kernel_h * f.folded_channels();
  if (gemm_element_bytes > 0) {
    const std::int64_t unfolded_bytes =
        f.unfolded_rows() * f.unfolded_columns() * gemm_element_bytes;
    if (unfolded_bytes / 16 > kMax32 || unfolded_bytes > kWidthFoldMaxUnfoldedBytes) return false;
  }
  return f.folded_channels() <= kWidthFoldMaxChannels &&
         f.folded_out_channels() <= kWidthFoldMaxChannels &&
         folded_filter <= kWidthFoldMaxFilterElements &&
         width_fold_work_ratio(f) <= kWidthFoldMaxWorkRatio &&
         f.folded_input_elements() <= kMax32 && f.folded_output_elements() <= kMax32;
}

bool width_fold_tile_is_new(const WidthFoldConv& c, int tile_w) {
  const ops::WidthFold f = width_fold_plan(c, tile_w);
  for (int earlier : kWidthFoldTileWidths) {
    if (earlier == tile_w) return true;
    if (width_fold_plan(c, earlier).tile_w == f.tile_w) return false;
  }
  return true;
}

std::vector<float> width_fold_filter(const ops::WidthFold& f, const float* w) {
  const int channels = f.folded_channels(), out_channels = f.folded_out_channels();
  std::vector<float> out(static_cast<std::size_t>(out_channels) * f.kernel_h * channels, 0.0f);
  for (int oc = 0; oc < f.out_channels; ++oc)
    for (int tw = 0; tw < f.tile_w; ++tw)
      for (int r = 0; r < f.kernel_h; ++r)
        for (int c = 0; c < f.channels; ++c)
          for (int ws = 0; ws < f.window; ++ws) {
            const int kw = ops::width_fold_kernel_column(f, tw, ws);
            if (kw < 0) continue;
            const std::size_t folded =
                (static_cast<std::size_t>(oc * f.tile_w + tw) * f.kernel_h + r) * channels +
                static_cast<std::size_t>(c * f.window + ws);
            out[folded] =
                w[((static_cast<std::size_t>(oc) * f.channels + c) * f.kernel_h + r) * f.kernel_w +
                  kw];
          }
  return out;
}

std::vector<float> width_fold_reference(const ops::WidthFold& f, const float* x, const float* w) {
  const std::vector<float> filter = width_fold_filter(f, w);
  const int channels = f.folded_channels(), out_channels = f.folded_out_channels();
  std::vector<float> folded_x(static_cast<std::size_t>(f.folded_input_elements()));
  for (std::size_t e = 0; e < folded_x.size(); ++e)
    folded_x[e] = ops::width_fold_input_value(f, x, static_cast<int>(e));
  std::vector<float> folded_y(static_cast<std::size_t>(f.folded_output_elements()));
  for (int image = 0; image < f.folded_batch(); ++image)
    for (int oh = 0; oh < f.out_h; ++oh)
      for (int k = 0; k < out_channels; ++k) {
        double acc = 0.0;
        for (int r = 0; r < f.kernel_h; ++r) {
          const int ih = oh * f.stride_h - f.pad_top + r * f.dilation_h;
          if (ih < 0 || ih >= f.height) continue;
          const float* row =
              &folded_x[(static_cast<std::size_t>(image) * f.height + ih) * channels];
          const float* taps = &filter[(static_cast<std::size_t>(k) * f.kernel_h + r) * channels];
          for (int c = 0; c < channels; ++c) acc += double(row[c]) * taps[c];
        }
        folded_y[(static_cast<std::size_t>(image) * f.out_h + oh) * out_channels + k] =
            static_cast<float>(acc);
      }
  std::vector<float> y(static_cast<std::size_t>(f.output_elements()));
  for (std::size_t e = 0; e < y.size(); ++e)
    y[e] =
        folded_y[static_cast<std::size_t>(ops::width_fold_output_source(f, static_cast<int>(e)))];
  return y;
}

std::vector<float> width_fold_gemm_reference(const ops::WidthFold& f, const float* x,
                                             const float* w, int chunk_elements) {
  const std::vector<float> filter = width_fold_filter(f, w);  // [N, K]
  std::vector<float> folded_x(static_cast<std::size_t>(f.folded_input_elements()));
  for (std::size_t e = 0; e < folded_x.size(); ++e)
    folded_x[e] = ops::width_fold_input_value(f, x, static_cast<int>(e));
  const std::int64_t rows = f.unfolded_rows(), columns = f.unfolded_columns();
  std::vector<float> a(static_cast<std::size_t>(rows * columns));
  for (std::int64_t q = 0; q < rows * columns / chunk_elements; ++q) {
    const int source = ops::width_fold_row_chunk_source(f, static_cast<int>(q), chunk_elements);
    for (int i = 0; i < chunk_elements; ++i)
      a[static_cast<std::size_t>(q * chunk_elements + i)] =
          source < 0 ? 0.0f
                     : folded_x[static_cast<std::size_t>(source) * chunk_elements +
                                static_cast<std::size_t>(i)];
  }
  const int out_channels = f.folded_out_channels();
  std::vector<float> d(static_cast<std::size_t>(rows) * out_channels);
  for (std::int64_t m = 0; m < rows; ++m)
    for (int n = 0; n < out_channels; ++n) {
      double acc = 0.0;
      for (std::int64_t k = 0; k < columns; ++k)
        acc += double(a[static_cast<std::size_t>(m * columns + k)]) *
               filter[static_cast<std::size_t>(n * columns + k)];
      d[static_cast<std::size_t>(m * out_channels + n)] = static_cast<float>(acc);
    }
  std::vector<float> y(static_cast<std::size_t>(f.output_elements()));
  for (std::size_t e = 0; e < y.size(); ++e)
    y[e] = d[static_cast<std::size_t>(ops::width_fold_output_source(f, static_cast<int>(e)))];
  return y;
}

}  // namespace voxrt::backends::cuda
