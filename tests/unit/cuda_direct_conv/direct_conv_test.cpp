// The direct_tc tactic's host side (conv_direct.h), on the CPU: the [k_padded, OC] filter matrix
// element by element, the qualification rule, and the kernel's gather (direct_conv_tap,
// direct_conv_window, direct_conv_input, run here through direct_conv_reference) times the filter
// matrix against a direct convolution, with strides, dilations and asymmetric pads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/conv_direct.h"

namespace voxrt::backends::cuda {
namespace {

struct ConvCase {
  int batch, channels, height, width, out_channels, kernel_h, kernel_w;
  int stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right;
  int dilation_h, dilation_w;
  int out_h() const {
    return (height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  int out_w() const {
    return (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
  ops::DirectConv shape() const {
    ops::DirectConv s;
    s.batch = batch;
    s.channels = channels;
    s.height = height;
    s.width = width;
    s.out_channels = out_channels;
    s.kernel_h = kernel_h;
    s.kernel_w = kernel_w;
    s.out_h = out_h();
    s.out_w = out_w();
    s.stride_h = stride_h;
    s.stride_w = stride_w;
    s.pad_top = pad_top;
    s.pad_left = pad_left;
    s.dilation_h = dilation_h;
    s.dilation_w = dilation_w;
    return s;
  }
};

std::vector<float> random_values(std::size_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& e : v) e = normal(rng);
  return v;
}

// y [B, OC, OH, OW] straight from x [B, C, H, W] and w [OC, C, KH, KW] (ONNX Conv, group 1).
std::vector<float> direct_conv(const ConvCase& s, const std::vector<float>& x,
                               const std::vector<float>& w) {
  std::vector<float> y;
  for (int b = 0; b < s.batch; ++b)
    for (int k = 0; k < s.out_channels; ++k)
      for (int oh = 0; oh < s.out_h(); ++oh)
        for (int ow = 0; ow < s.out_w(); ++ow) {
          double acc = 0.0;
          for (int c = 0; c < s.channels; ++c)
            for (int r = 0; r < s.kernel_h; ++r)
              for (int j = 0; j < s.kernel_w; ++j) {
                const int ih = oh * s.stride_h - s.pad_top + r * s.dilation_h;
                const int iw = ow * s.stride_w - s.pad_left + j * s.dilation_w;
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

TEST(CudaDirectConv, FilterMatrixIsOihwRowsByOutputChannelZeroPaddedToSixteen) {
  const std::int64_t oc_count = 32, channels = 2, kh = 3, kw = 5;  // K 30 -> 32 rows
  std::vector<float> w(static_cast<std::size_t>(oc_count * channels * kh * kw));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i + 1);
  const std::vector<float> m = direct_conv_filter(w.data(), oc_count, channels, kh, kw);
  ASSERT_EQ(m.size(), static_cast<std::size_t>(32 * oc_count));
  for (std::int64_t oc = 0; oc < oc_count; ++oc) {
    for (std::int64_t c = 0; c < channels; ++c)
      for (std::int64_t r = 0; r < kh; ++r)
        for (std::int64_t j = 0; j < kw; ++j) {
          const std::int64_t row = (c * kh + r) * kw + j;
          EXPECT_EQ(m[static_cast<std::size_t>(row * oc_count + oc)],
                    w[static_cast<std::size_t>(((oc * channels + c) * kh + r) * kw + j)])
              << "oc " << oc << " c " << c << " r " << r << " s " << j;
        }
    for (std::int64_t row = 30; row < 32; ++row)
      EXPECT_EQ(m[static_cast<std::size_t>(row * oc_count + oc)], 0.0f) << "padding row " << row;
  }
  // DS2's conv.0: K = 41 * 11 = 451 -> 464 rows.
  const std::vector<float> ds2(static_cast<std::size_t>(32 * 451), 1.0f);
  EXPECT_EQ(direct_conv_filter(ds2.data(), 32, 1, 41, 11).size(), std::size_t{464 * 32});
  // A multiple of 16 gets no padding.
  const std::vector<float> sixteen(static_cast<std::size_t>(16 * 16), 1.0f);
  EXPECT_EQ(direct_conv_filter(sixteen.data(), 16, 1, 4, 4).size(), std::size_t{16 * 16});
}

TEST(CudaDirectConv, QualifiesSmallKAndUpToFourTilesOfOutputChannelsAtHalfPrecision) {
  EXPECT_TRUE(direct_conv_applies(4, 1, 32, 1, 41, 11, true)) << "DS2's conv.0";
  EXPECT_TRUE(direct_conv_applies(4, 1, 16, 2, 3, 5, true));
  EXPECT_TRUE(direct_conv_applies(4, 1, 64, 4, 16, 16, true)) << "K = 1024";
  EXPECT_FALSE(direct_conv_applies(4, 1, 64, 5, 15, 14, true)) << "K = 1050";
  EXPECT_FALSE(direct_conv_applies(4, 1, 32, 1, 41, 11, false)) << "FP32 / TF32";
  EXPECT_FALSE(direct_conv_applies(4, 1, 8, 1, 5, 3, true)) << "OC 8";
  EXPECT_FALSE(direct_conv_applies(4, 1, 24, 1, 5, 3, true)) << "OC 24";
  EXPECT_FALSE(direct_conv_applies(4, 1, 80, 1, 5, 3, true)) << "OC 80";
  EXPECT_FALSE(direct_conv_applies(4, 2, 32, 1, 5, 3, true)) << "group 2";
  EXPECT_FALSE(direct_conv_applies(3, 1, 32, 1, 1, 11, true)) << "1-D";
  EXPECT_TRUE(direct_conv_fits(256 * 161 * 200, 256 * 32 * 81 * 100));
  EXPECT_FALSE(direct_conv_fits(std::int64_t{1} << 31, 16));
  EXPECT_FALSE(direct_conv_fits(16, std::int64_t{1} << 31));
}

TEST(CudaDirectConv, TapsPastKReadZero) {
  const ConvCase c{1, 1, 4, 4, 16, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1};  // K 9, 16 rows
  const ops::DirectConv s = c.shape();
  const std::vector<float> x(16, 1.0f);
  const ops::DirectConvWindow inner = ops::direct_conv_window(s, 1, 1);
  for (int k = 0; k < 9; ++k)
    EXPECT_EQ(ops::direct_conv_input(s, x.data(), inner, ops::direct_conv_tap(s, k)), 1.0f) << k;
  for (int k = 9; k < 32; ++k)
    EXPECT_EQ(ops::direct_conv_input(s, x.data(), inner, ops::direct_conv_tap(s, k)), 0.0f) << k;
  // The window of output (0, 0) starts in the padding: its first row and column read zero.
  const ops::DirectConvWindow corner = ops::direct_conv_window(s, 0, 0);
  EXPECT_EQ(ops::direct_conv_input(s, x.data(), corner, ops::direct_conv_tap(s, 0)), 0.0f);
  EXPECT_EQ(ops::direct_conv_input(s, x.data(), corner, ops::direct_conv_tap(s, 4)), 1.0f);
}

TEST(CudaDirectConv, GatherTimesFilterMatrixIsTheConvolution) {
  const std::vector<ConvCase> cases = {
      // DS2's conv.0 at a streaming chunk (C 1, 41 x 11, stride 2, pads 20 / 5), reduced height.
      {2, 1, 61, 16, 32, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1},
      // Two channels, dilation_w 2, asymmetric pads, a partial last tile of 64 positions.
      {3, 2, 13, 11, 16, 3, 5, 1, 1, 1, 2, 0, 3, 1, 2},
      // Strides larger than the kernel and a padding beyond it on one side only.
      {1, 3, 9, 10, 16, 2, 3, 3, 2, 0, 4, 2, 0, 2, 1},
      // Valid convolution, K a multiple of 16.
      {2, 4, 8, 8, 64, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1},
  };
  std::mt19937 rng(7);
  for (const ConvCase& c : cases) {
    SCOPED_TRACE(testing::Message() << "C " << c.channels << " kernel " << c.kernel_h << "x"
                                    << c.kernel_w << " out " << c.out_h() << "x" << c.out_w());
    const auto x =
        random_values(static_cast<std::size_t>(c.batch * c.channels * c.height * c.width), rng);
    const auto w = random_values(
        static_cast<std::size_t>(c.out_channels * c.channels * c.kernel_h * c.kernel_w), rng);
    const std::vector<float> want = direct_conv(c, x, w);
    const std::vector<float> got = direct_conv_reference(
        c.shape(), x.data(),
        direct_conv_filter(w.data(), c.out_channels, c.channels, c.kernel_h, c.kernel_w));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

}  // namespace
}  // namespace voxrt::backends::cuda
