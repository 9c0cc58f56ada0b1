#include "backends/cuda/conv_unfold.h"

namespace voxrt::backends::cuda {

bool unfold_w_applies(std::size_t weight_rank, std::int64_t channels, std::int64_t kernel_w) {
  return weight_rank == 4 && kernel_w > 1 && channels * kernel_w <= kUnfoldWMaxChannels;
}

std::int64_t unfold_w_channels(std::int64_t channels, std::int64_t kernel_w, bool nhwc) {
  const std::int64_t unfolded = channels * kernel_w;
  return nhwc ? (unfolded + 7) / 8 * 8 : unfolded;
}

std::vector<float> unfold_w_filter(const float* w, std::int64_t out_channels, std::int64_t channels,
                                   std::int64_t kernel_h, std::int64_t kernel_w,
                                   std::int64_t unfolded_channels, bool channels_last) {
  std::vector<float> out(static_cast<std::size_t>(out_channels * unfolded_channels * kernel_h),
                         0.0f);
  for (std::int64_t k = 0; k < out_channels; ++k)
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t r = 0; r < kernel_h; ++r)
        for (std::int64_t j = 0; j < kernel_w; ++j) {
          const std::int64_t channel = c * kernel_w + j;
          const std::int64_t to = channels_last ? (k * kernel_h + r) * unfolded_channels + channel
                                                : (k * unfolded_channels + channel) * kernel_h + r;
          out[static_cast<std::size_t>(to)] = w[((k * channels + c) * kernel_h + r) * kernel_w + j];
        }
  return out;
}

std::vector<float> unfold_w_input(const ops::UnfoldW& u, const float* x) {
  std::vector<float> out(
      static_cast<std::size_t>(u.batch * u.unfolded_channels * u.height * u.out_w), 0.0f);
  const int height = static_cast<int>(u.height), out_w = static_cast<int>(u.out_w);
  const int channels = static_cast<int>(u.unfolded_channels);
  std::size_t i = 0;  // the kernels' flat output index
  for (std::int64_t b = 0; b < u.batch; ++b) {
    if (u.nhwc) {
      for (int h = 0; h < height; ++h)
        for (int ow = 0; ow < out_w; ++ow)
          for (int first = 0; first < channels; first += 8) {
            float values[8];
            ops::unfolded_values(u, x, b, h, ow, first, values);
            for (int k = 0; k < 8 && first + k < channels; ++k) out[i++] = values[k];
          }
    } else {
      for (int channel = 0; channel < channels; ++channel)
        for (int h = 0; h < height; ++h)
          for (int ow = 0; ow < out_w; ++ow) {
            float value[1];
            ops::unfolded_values(u, x, b, h, ow, channel, value);
            out[i++] = value[0];
          }
    }
  }
  return out;
}

}  // namespace voxrt::backends::cuda
