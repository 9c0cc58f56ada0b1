// A direct 2-D convolution on the CPU (ONNX Conv, group 1, double accumulation): the oracle the
// host-side tests of the CUDA conv tactics (direct_tc, the width folds) compare against.
#pragma once

#include <cstdint>
#include <vector>

namespace voxrt::test {

struct ConvGeometry {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::int64_t out_channels = 0, kernel_h = 1, kernel_w = 1, out_h = 0, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1,
               dilation_w = 1;
};

// y [B, OC, OH, OW] straight from x [B, C, H, W] and w [OC, C, KH, KW]; taps in the padding
// read zero. Geometry: ConvGeometry or any struct with the same fields (the width-fold tactics'
// WidthFoldConv has them).
template <typename Geometry>
std::vector<float> direct_conv_oracle(const Geometry& s, const std::vector<float>& x,
                                      const std::vector<float>& w) {
  std::vector<float> y;
  y.reserve(static_cast<std::size_t>(s.batch * s.out_channels * s.out_h * s.out_w));
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t k = 0; k < s.out_channels; ++k)
      for (std::int64_t oh = 0; oh < s.out_h; ++oh)
        for (std::int64_t ow = 0; ow < s.out_w; ++ow) {
          double acc = 0.0;
          for (std::int64_t c = 0; c < s.channels; ++c)
            for (std::int64_t r = 0; r < s.kernel_h; ++r)
              for (std::int64_t j = 0; j < s.kernel_w; ++j) {
                const std::int64_t ih = oh * s.stride_h - s.pad_top + r * s.dilation_h;
                const std::int64_t iw = ow * s.stride_w - s.pad_left + j * s.dilation_w;
                if (ih < 0 || ih >= s.height || iw < 0 || iw >= s.width) continue;
                acc += double(x[static_cast<std::size_t>(
                           ((b * s.channels + c) * s.height + ih) * s.width + iw)]) *
                       w[static_cast<std::size_t>(
                           ((k * s.channels + c) * s.kernel_h + r) * s.kernel_w + j)];
              }
          y.push_back(static_cast<float>(acc));
        }
  return y;
}

}  // namespace voxrt::test
