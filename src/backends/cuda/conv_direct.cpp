#include "backends/cuda/conv_direct.h"

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
      for (int oc = 0; oc < s.out_channels; ++oc) {
        double acc = 0.0;
        for (int k = 0; k < k_padded; ++k)
          acc += double(a[static_cast<std::size_t>(k)]) *
                 filter[static_cast<std::size_t>(k) * s.out_channels + oc];
        y[(static_cast<std::size_t>(b) * s.out_channels + oc) * positions + p] =
            static_cast<float>(acc);
      }
    }
  return y;
}

}  // namespace voxrt::backends::cuda
