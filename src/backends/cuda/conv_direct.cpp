#include "backends/cuda/conv_direct.h"

#include <algorithm>
#include <limits>

namespace voxrt::backends::cuda {

bool direct_conv_applies(std::size_t weight_rank, std::int64_t group, std::int64_t out_channels,
                         std::int64_t channels, std::int64_t kernel_h, std::int64_t kernel_w,
                         bool half_operands) {
  return half_operands && weight_rank == 4 && group == 1 && out_channels > 0 &&
         out_channels % 16 == 0 && out_channels <= kDirectConvMaxOutChannels &&
         channels * kernel_h * kernel_w <= kDirectConvMaxK;
}

bool direct_conv_fits(std::int64_t x_elements, std::int64_t y_elements) {
  return x_elements < kDirectConvMaxElements && y_elements < kDirectConvMaxElements;
}

std::vector<float> direct_conv_filter(const float* w, std::int64_t out_channels,
                                      std::int64_t channels, std::int64_t kernel_h,
                                      std::int64_t kernel_w) {
  const std::int64_t k = channels * kernel_h * kernel_w;
  const std::int64_t k_padded = (k + 15) / 16 * 16;
  std::vector<float> out(static_cast<std::size_t>(k_padded * out_channels), 0.0f);
  for (std::int64_t oc = 0; oc < out_channels; ++oc)
    for (std::int64_t row = 0; row < k; ++row)  // OIHW: row (c, r, s) is w's inner index
      out[static_cast<std::size_t>(row * out_channels + oc)] = w[oc * k + row];
  return out;
}

namespace {

// Both references' product: y[b, :, p] = A[p, :] x filter, A's row `a` gathered by the caller.
void multiply_row(const ops::DirectConv& s, const std::vector<float>& a,
                  const std::vector<float>& filter, int b, int p, std::vector<float>& y) {
  const int positions = s.out_h * s.out_w;
  for (int oc = 0; oc < s.out_channels; ++oc) {
    double acc = 0.0;
    for (int k = 0; k < s.k_padded(); ++k)
      acc += double(a[static_cast<std::size_t>(k)]) *
             filter[static_cast<std::size_t>(k) * s.out_channels + oc];
    y[(static_cast<std::size_t>(b) * s.out_channels + oc) * positions + p] =
        static_cast<float>(acc);
  }
}

}  // namespace

std::vector<float> direct_conv_reference(const ops::DirectConv& s, const float* x,
                                         const std::vector<float>& filter) {
  const int positions = s.out_h * s.out_w, k_padded = s.k_padded();
  const std::size_t image = static_cast<std::size_t>(s.channels) * s.height * s.width;
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.out_channels * positions);
  std::vector<ops::DirectConvTap> taps(static_cast<std::size_t>(k_padded));
  for (int k = 0; k < k_padded; ++k) taps[static_cast<std::size_t>(k)] = ops::direct_conv_tap(s, k);
  std::vector<float> a(static_cast<std::size_t>(k_padded));
  for (int b = 0; b < s.batch; ++b)
    for (int p = 0; p < positions; ++p) {
      const int oh = p / s.out_w;
      const ops::DirectConvWindow window = ops::direct_conv_window(s, oh, p - oh * s.out_w);
      for (int k = 0; k < k_padded; ++k)
        a[static_cast<std::size_t>(k)] =
            ops::direct_conv_input(s, x + b * image, window, taps[static_cast<std::size_t>(k)]);
      multiply_row(s, a, filter, b, p, y);
    }
  return y;
}

ops::DirectConvRegion direct_conv_region(const ops::DirectConv& s) {
  ops::DirectConvRegion g;
  const int positions = s.out_h * s.out_w;
  if (positions <= 0 || s.out_w <= 0) return g;
  for (int first = 0; first < positions; first += ops::kDirectConvTilePositions) {
    const int last = std::min(first + ops::kDirectConvTilePositions, positions) - 1;
    g.out_rows = std::max(g.out_rows, last / s.out_w - first / s.out_w + 1);
  }
  g.rows = (g.out_rows - 1) * s.stride_h + (s.kernel_h - 1) * s.dilation_h + 1;
  g.cols = (s.out_w - 1) * s.stride_w + (s.kernel_w - 1) * s.dilation_w + 1;
  return g;
}

ops::DirectConvLayout direct_conv_plan(const ops::DirectConv& s) {
  const ops::DirectConvRegion g = direct_conv_region(s);
  const ops::DirectConvLayout gather = ops::direct_conv_layout(s, g, false);
  // The region's size in 64 bits first: its layout's offsets are 32-bit.
  const std::int64_t region_elements = std::int64_t{s.channels} * g.rows * g.cols + 1;
  if (g.out_rows <= 0 || region_elements * 2 > kDirectConvRegionMaxBytes) return gather;
  const ops::DirectConvLayout region = ops::direct_conv_layout(s, g, true);
  const bool fits =
      region.bytes <= kDirectConvRegionPreferredBytes ||
      (gather.bytes > kDirectConvRegionPreferredBytes && region.bytes <= kDirectConvRegionMaxBytes);
  return fits ? region : gather;
}

std::vector<float> direct_conv_region_reference(const ops::DirectConv& s, const float* x,
                                                const std::vector<float>& filter) {
  const int positions = s.out_h * s.out_w, k_padded = s.k_padded();
  const std::size_t image = static_cast<std::size_t>(s.channels) * s.height * s.width;
  const ops::DirectConvRegion g = direct_conv_region(s);
  const int zero = g.zero(s);
  std::vector<float> y(static_cast<std::size_t>(s.batch) * s.out_channels * positions);
  std::vector<int> taps(static_cast<std::size_t>(k_padded));
  for (int k = 0; k < k_padded; ++k)
    taps[static_cast<std::size_t>(k)] = ops::direct_conv_region_tap(s, g, k);
  // Filled with NaN first: an element the fill misses, or a read outside the region, shows.
  std::vector<float> region(static_cast<std::size_t>(zero) + 1);
  std::vector<float> a(static_cast<std::size_t>(k_padded));
  for (int b = 0; b < s.batch; ++b)
    for (int first = 0; first < positions; first += ops::kDirectConvTilePositions) {
      const int oh_first = first / s.out_w;
      std::fill(region.begin(), region.end(), std::numeric_limits<float>::quiet_NaN());
      for (int e = 0; e < zero; ++e)
        region[static_cast<std::size_t>(e)] =
            ops::direct_conv_region_value(s, g, x + b * image, oh_first, e);
      region[static_cast<std::size_t>(zero)] = 0.0f;
      for (int p = first; p < std::min(first + ops::kDirectConvTilePositions, positions); ++p) {
        const int oh = p / s.out_w;
        const int base = ops::direct_conv_region_base(s, g, oh_first, oh, p - oh * s.out_w);
        for (int k = 0; k < k_padded; ++k) {
          const int index =
              ops::direct_conv_region_index(zero, base, taps[static_cast<std::size_t>(k)]);
          a[static_cast<std::size_t>(k)] = index >= 0 && index <= zero
                                               ? region[static_cast<std::size_t>(index)]
                                               : std::numeric_limits<float>::quiet_NaN();
        }
        multiply_row(s, a, filter, b, p, y);
      }
    }
  return y;
}

}  // namespace voxrt::backends::cuda
