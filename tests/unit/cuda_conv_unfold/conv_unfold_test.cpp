// The cuDNN unfold_w tactics' host side (conv_unfold.h), on the CPU: the filter rewrite element
// by element, and the unfold kernel's element mapping (unfolded_values, run here through
// unfold_w_input) checked by running the rewritten (KH x 1) convolution on x' and w' against the
// direct convolution, in NCHW and NHWC (8 channels at a time, as the NHWC kernel writes them).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/conv_unfold.h"

namespace voxrt::backends::cuda {
namespace {

struct ConvCase {
  std::int64_t batch, channels, height, width, out_channels, kernel_h, kernel_w;
  std::int64_t stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right;
  std::int64_t dilation_h, dilation_w;
  std::int64_t out_h() const {
    return (height + pad_top + pad_bottom - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  }
  std::int64_t out_w() const {
    return (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  }
};

std::vector<float> random_values(std::int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& e : v) e = normal(rng);
  return v;
}

// y [B, OC, OH, OW] straight from x [B, C, H, W] and w [OC, C, KH, KW] (ONNX Conv, group 1).
std::vector<float> direct_conv(const ConvCase& s, const std::vector<float>& x,
                               const std::vector<float>& w) {
  const std::int64_t oh_count = s.out_h(), ow_count = s.out_w();
  std::vector<float> y(static_cast<std::size_t>(s.batch * s.out_channels * oh_count * ow_count));
  std::size_t i = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t k = 0; k < s.out_channels; ++k)
      for (std::int64_t oh = 0; oh < oh_count; ++oh)
        for (std::int64_t ow = 0; ow < ow_count; ++ow) {
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
          y[i++] = static_cast<float>(acc);
        }
  return y;
}

// What cuDNN computes on x' and w': the (KH x 1) convolution, stride (stride_h, 1), pad
// (pad_top, 0), dilation (dilation_h, 1), over x' of width out_w; NCHW/OIHW or NHWC/KRSC.
std::vector<float> unfolded_conv(const ConvCase& s, std::int64_t unfolded_channels, bool nhwc,
                                 const std::vector<float>& xu, const std::vector<float>& wu) {
  const std::int64_t oh_count = s.out_h(), width = s.out_w(), cu_count = unfolded_channels;
  std::vector<float> y(static_cast<std::size_t>(s.batch * s.out_channels * oh_count * width));
  std::size_t i = 0;
  for (std::int64_t b = 0; b < s.batch; ++b)
    for (std::int64_t k = 0; k < s.out_channels; ++k)
      for (std::int64_t oh = 0; oh < oh_count; ++oh)
        for (std::int64_t ow = 0; ow < width; ++ow) {
          double acc = 0.0;
          for (std::int64_t cu = 0; cu < cu_count; ++cu)
            for (std::int64_t r = 0; r < s.kernel_h; ++r) {
              const std::int64_t ih = oh * s.stride_h - s.pad_top + r * s.dilation_h;
              if (ih < 0 || ih >= s.height) continue;
              const std::int64_t x_at = nhwc ? ((b * s.height + ih) * width + ow) * cu_count + cu
                                             : ((b * cu_count + cu) * s.height + ih) * width + ow;
              const std::int64_t w_at = nhwc ? (k * s.kernel_h + r) * cu_count + cu
                                             : (k * cu_count + cu) * s.kernel_h + r;
              acc +=
                  double(xu[static_cast<std::size_t>(x_at)]) * wu[static_cast<std::size_t>(w_at)];
            }
          y[i++] = static_cast<float>(acc);
        }
  return y;
}

ops::UnfoldW unfold_of(const ConvCase& s, bool nhwc) {
  ops::UnfoldW u;
  u.batch = s.batch;
  u.channels = s.channels;
  u.height = s.height;
  u.width = s.width;
  u.kernel_w = s.kernel_w;
  u.stride_w = s.stride_w;
  u.pad_left = s.pad_left;
  u.dilation_w = s.dilation_w;
  u.out_w = s.out_w();
  u.unfolded_channels = unfold_w_channels(s.channels, s.kernel_w, nhwc);
  u.nhwc = nhwc;
  return u;
}

TEST(CudaConvUnfold, ChannelCountAndWhichConvsTakeIt) {
  EXPECT_EQ(unfold_w_channels(1, 11, false), 11);
  EXPECT_EQ(unfold_w_channels(1, 11, true), 16);  // DS2's conv.0
  EXPECT_EQ(unfold_w_channels(2, 3, true), 8);
  EXPECT_EQ(unfold_w_channels(8, 8, true), 64);
  EXPECT_EQ(unfold_w_channels(3, 3, false), 9);
  EXPECT_TRUE(unfold_w_applies(4, 1, 11));
  EXPECT_TRUE(unfold_w_applies(4, 8, 8));    // C * KW = 64
  EXPECT_FALSE(unfold_w_applies(4, 13, 5));  // 65
  EXPECT_FALSE(unfold_w_applies(4, 4, 1));   // nothing to unfold
  EXPECT_FALSE(unfold_w_applies(3, 1, 11));  // 1-D
}

TEST(CudaConvUnfold, FilterRewriteElementByElement) {
  std::mt19937 rng(7);
  const std::int64_t oc_count = 3, c_count = 2, kh_count = 4, kw_count = 3;
  const std::vector<float> w = random_values(oc_count * c_count * kh_count * kw_count, rng);
  for (bool channels_last : {false, true}) {
    SCOPED_TRACE(channels_last ? "KRSC" : "OIHW");
    const std::int64_t cu_count = unfold_w_channels(c_count, kw_count, channels_last);
    EXPECT_EQ(cu_count, channels_last ? 8 : 6);
    const std::vector<float> wu =
        unfold_w_filter(w.data(), oc_count, c_count, kh_count, kw_count, cu_count, channels_last);
    ASSERT_EQ(wu.size(), static_cast<std::size_t>(oc_count * cu_count * kh_count));
    for (std::int64_t k = 0; k < oc_count; ++k)
      for (std::int64_t cu = 0; cu < cu_count; ++cu)
        for (std::int64_t r = 0; r < kh_count; ++r) {
          // w'[k, c * KW + j, r] = w[k, c, r, j]; the padding channels are zero.
          const std::int64_t c = cu / kw_count, j = cu % kw_count;
          const float want =
              cu < c_count * kw_count
                  ? w[static_cast<std::size_t>(k * c_count * kh_count * kw_count +
                                               c * kh_count * kw_count + r * kw_count + j)]
                  : 0.0f;
          const std::int64_t at = channels_last ? k * kh_count * cu_count + r * cu_count + cu
                                                : k * cu_count * kh_count + cu * kh_count + r;
          EXPECT_EQ(wu[static_cast<std::size_t>(at)], want)
              << "k " << k << " cu " << cu << " r " << r;
        }
  }
}

// x' in NHWC (8-channel runs) is x' in NCHW transposed, with zero padding channels.
TEST(CudaConvUnfold, NhwcRunsMatchTheNchwMapping) {
  std::mt19937 rng(3);
  const ConvCase s{2, 3, 5, 9, 1, 1, 3, 1, 2, 0, 2, 0, 1, 1, 2};
  const std::vector<float> x = random_values(s.batch * s.channels * s.height * s.width, rng);
  const ops::UnfoldW nchw = unfold_of(s, false), nhwc = unfold_of(s, true);
  ASSERT_EQ(nchw.unfolded_channels, 9);
  ASSERT_EQ(nhwc.unfolded_channels, 16);
  const std::vector<float> a = unfold_w_input(nchw, x.data()), b = unfold_w_input(nhwc, x.data());
  const std::int64_t ow_count = s.out_w();
  for (std::int64_t n = 0; n < s.batch; ++n)
    for (std::int64_t h = 0; h < s.height; ++h)
      for (std::int64_t ow = 0; ow < ow_count; ++ow)
        for (std::int64_t cu = 0; cu < nhwc.unfolded_channels; ++cu) {
          const float got =
              b[static_cast<std::size_t>(((n * s.height + h) * ow_count + ow) * 16 + cu)];
          const float want =
              cu < 9 ? a[static_cast<std::size_t>(((n * 9 + cu) * s.height + h) * ow_count + ow)]
                     : 0.0f;
          EXPECT_EQ(got, want) << "b " << n << " h " << h << " ow " << ow << " channel " << cu;
        }
}

TEST(CudaConvUnfold, UnfoldedConvolutionIsTheConvolution) {
  const std::vector<ConvCase> cases = {
      // batch, C, H, W, OC, KH, KW, stride h/w, pads top/left/bottom/right, dilation h/w
      {2, 1, 21, 16, 4, 5, 3, 2, 2, 2, 1, 2, 1, 1, 1},      // the gpu test's C = 1 case
      {1, 2, 9, 13, 3, 3, 3, 1, 2, 1, 2, 1, 2, 1, 2},       // C = 2, dilation_w 2
      {2, 1, 41, 16, 2, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1},  // DS2's conv.0, fewer rows
      {1, 3, 6, 10, 2, 2, 4, 1, 3, 0, 3, 1, 0, 2, 1},       // asymmetric pads, stride_w 3
      {1, 2, 4, 3, 2, 1, 5, 1, 1, 0, 4, 0, 4, 1, 1},        // padding wider than the row
  };
  for (const ConvCase& s : cases) {
    SCOPED_TRACE(testing::Message() << "C " << s.channels << " K " << s.kernel_h << "x"
                                    << s.kernel_w << " W " << s.width);
    std::mt19937 rng(11);
    const std::vector<float> x = random_values(s.batch * s.channels * s.height * s.width, rng);
    const std::vector<float> w =
        random_values(s.out_channels * s.channels * s.kernel_h * s.kernel_w, rng);
    const std::vector<float> want = direct_conv(s, x, w);
    for (bool nhwc : {false, true}) {
      SCOPED_TRACE(nhwc ? "NHWC" : "NCHW");
      const ops::UnfoldW u = unfold_of(s, nhwc);
      const std::vector<float> xu = unfold_w_input(u, x.data());
      ASSERT_EQ(xu.size(),
                static_cast<std::size_t>(s.batch * u.unfolded_channels * s.height * s.out_w()));
      const std::vector<float> wu = unfold_w_filter(
          w.data(), s.out_channels, s.channels, s.kernel_h, s.kernel_w, u.unfolded_channels, nhwc);
      const std::vector<float> got = unfolded_conv(s, u.unfolded_channels, nhwc, xu, wu);
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << "output " << i;
    }
  }
}

}  // namespace
}  // namespace voxrt::backends::cuda
