// The width-fold tactics' host side (conv_width_fold.h), on the CPU: the plan (tiles, window,
// where the window starts, the alignment of the folded channels), the folded filter, and y
// through the kernels' own index maps (width_fold_input_value, width_fold_output_source and, for
// the GEMM tactics, width_fold_row_chunk_source; run here through width_fold_reference and
// width_fold_gemm_reference) against a direct convolution, with strides, dilations, asymmetric
// width pads, one tile and several (the last one partial).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "backends/cuda/conv_width_fold.h"
#include "support/direct_conv_oracle.h"

namespace voxrt::backends::cuda {
namespace {

WidthFoldConv make_conv(std::int64_t batch, std::int64_t channels, std::int64_t height,
                        std::int64_t width, std::int64_t out_channels, std::int64_t kernel_h,
                        std::int64_t kernel_w, std::int64_t stride_h, std::int64_t stride_w,
                        std::int64_t pad_h, std::int64_t pad_left, std::int64_t pad_right,
                        std::int64_t dilation_h = 1, std::int64_t dilation_w = 1) {
  WidthFoldConv c;
  c.batch = batch;
  c.channels = channels;
  c.height = height;
  c.width = width;
  c.out_channels = out_channels;
  c.kernel_h = kernel_h;
  c.kernel_w = kernel_w;
  c.stride_h = stride_h;
  c.stride_w = stride_w;
  c.pad_top = c.pad_bottom = pad_h;
  c.pad_left = pad_left;
  c.pad_right = pad_right;
  c.dilation_h = dilation_h;
  c.dilation_w = dilation_w;
  c.out_h = (height + 2 * pad_h - dilation_h * (kernel_h - 1) - 1) / stride_h + 1;
  c.out_w = (width + pad_left + pad_right - dilation_w * (kernel_w - 1) - 1) / stride_w + 1;
  return c;
}

std::vector<float> random_values(std::int64_t count, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& e : v) e = normal(rng);
  return v;
}

void expect_fold_matches_direct(const std::string& name, const WidthFoldConv& c, int tile_w) {
  SCOPED_TRACE(name + ", tile width " + std::to_string(tile_w));
  ASSERT_TRUE(width_fold_applies(c, tile_w));
  std::mt19937 rng(11);
  const std::vector<float> x = random_values(c.batch * c.channels * c.height * c.width, rng);
  const std::vector<float> w =
      random_values(c.out_channels * c.channels * c.kernel_h * c.kernel_w, rng);
  const ops::WidthFold f = width_fold_plan(c, tile_w);
  const std::vector<float> expected = test::direct_conv_oracle(c, x, w);
  const std::vector<float> folded = width_fold_reference(f, x.data(), w.data());
  ASSERT_EQ(folded.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i)
    ASSERT_NEAR(folded[i], expected[i], 1e-4 * (1.0 + std::fabs(expected[i]))) << "element " << i;
  // The GEMM tactics: A in chunks of 8 two-byte elements (FP16/BF16) or 4 floats (FP32/TF32).
  for (int chunk_elements : {8, 4}) {
    ASSERT_TRUE(width_fold_applies(c, tile_w, 16 / chunk_elements));
    const std::vector<float> gemm =
        width_fold_gemm_reference(f, x.data(), w.data(), chunk_elements);
    ASSERT_EQ(gemm.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(gemm[i], expected[i], 1e-4 * (1.0 + std::fabs(expected[i])))
          << "GEMM path, chunks of " << chunk_elements << ", element " << i;
  }
}

// The kernels' division by a constant against the hardware's, at the edges of the 31-bit range
// and for every divisor up to 3,000 plus some large ones.
TEST(CudaWidthFold, FastDivisorDividesExactly) {
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> any(0, std::numeric_limits<int>::max());
  std::vector<int> divisors;
  for (int d = 1; d <= 3000; ++d) divisors.push_back(d);
  for (int d : {65535, 65536, 65537, 1 << 20, (1 << 30) - 1, 1 << 30, (1 << 30) + 1,
                std::numeric_limits<int>::max()})
    divisors.push_back(d);
  for (int d : divisors) {
    const ops::FastDivisor f = make_fast_divisor(d);
    std::vector<int> xs = {
        0, 1, d - 1, d, std::numeric_limits<int>::max(), std::numeric_limits<int>::max() - 1};
    if (d < std::numeric_limits<int>::max() / 3) xs.insert(xs.end(), {d + 1, 2 * d - 1, 3 * d});
    for (int i = 0; i < 200; ++i) xs.push_back(any(rng));
    for (int x : xs) {
      ASSERT_EQ(f.div(x), x / d) << x << " / " << d;
      ASSERT_EQ(f.mod(x), x % d) << x << " % " << d;
    }
  }
}

TEST(CudaWidthFold, FoldedConvolutionEqualsTheDirectOne) {
  // DS2's conv.3 on a chunk, fewer channels and rows: one tile of 8 (window = the 8 in-image
  // columns), and tiles of 4 (two, each window 14 wide with the padding in it).
  const WidthFoldConv conv3 = make_conv(2, 4, 21, 8, 3, 7, 11, 2, 1, 3, 5, 5);
  expect_fold_matches_direct("conv.3 chunk", conv3, 8);
  expect_fold_matches_direct("conv.3 chunk", conv3, 4);
  // DS2's conv.0 on a chunk: one channel, stride 2 along the width too.
  const WidthFoldConv conv0 = make_conv(3, 1, 25, 16, 5, 9, 11, 2, 2, 4, 5, 5);
  expect_fold_matches_direct("conv.0 chunk", conv0, 8);
  expect_fold_matches_direct("conv.0 chunk", conv0, 4);
  expect_fold_matches_direct("conv.0 chunk", conv0, 16);
  // 26 output columns: tiles of 8 leave a partial last one; dilation along both axes.
  const WidthFoldConv wide = make_conv(2, 2, 9, 30, 4, 3, 5, 1, 1, 2, 2, 2, 2, 2);
  ASSERT_EQ(wide.out_w, 26);
  expect_fold_matches_direct("wide, dilated", wide, 8);
  expect_fold_matches_direct("wide, dilated", wide, 4);
  // Tiles of 16 would read 24 columns for 16 outputs of a 5-tap kernel: declined.
  EXPECT_FALSE(width_fold_applies(wide, 16));
  // Asymmetric width pads, three channels (the window widens to a multiple of 8 channels).
  const WidthFoldConv asym = make_conv(1, 3, 7, 11, 2, 3, 11, 1, 2, 1, 5, 4);
  expect_fold_matches_direct("asymmetric pads", asym, 8);
  expect_fold_matches_direct("asymmetric pads", asym, 4);
  // No padding at all, kernel as wide as the input.
  const WidthFoldConv valid = make_conv(2, 8, 6, 5, 3, 2, 5, 1, 1, 0, 0, 0);
  expect_fold_matches_direct("valid", valid, 8);
}

TEST(CudaWidthFold, PlanOfDs2Convolutions) {
  // conv.3 on a batch-256 chunk: 32 -> 32 channels over 8 columns become 256 -> 256 over one.
  const WidthFoldConv conv3 = make_conv(256, 32, 81, 8, 32, 21, 11, 2, 1, 10, 5, 5);
  const ops::WidthFold f3 = width_fold_plan(conv3, 8);
  EXPECT_EQ(f3.tile_w, 8);
  EXPECT_EQ(f3.tiles, 1);
  EXPECT_EQ(f3.window, 8);
  EXPECT_EQ(f3.window_start, 0);
  EXPECT_EQ(f3.folded_channels(), 256);
  EXPECT_EQ(f3.folded_out_channels(), 256);
  EXPECT_EQ(f3.folded_batch(), 256);
  EXPECT_NEAR(width_fold_work_ratio(f3), 8.0 / 11.0, 1e-12);
  EXPECT_TRUE(width_fold_applies(conv3, 8));
  // Tiles of 16 plan the same fold; tiles of 4 do not.
  EXPECT_FALSE(width_fold_tile_is_new(conv3, 16));
  EXPECT_TRUE(width_fold_tile_is_new(conv3, 4));
  EXPECT_TRUE(width_fold_tile_is_new(conv3, 8));
  // conv.0 on a chunk: 16 columns, stride 2 -> 8 outputs; its window is the whole input.
  const WidthFoldConv conv0 = make_conv(256, 1, 161, 16, 32, 41, 11, 2, 2, 20, 5, 5);
  const ops::WidthFold f0 = width_fold_plan(conv0, 8);
  EXPECT_EQ(f0.tiles, 1);
  EXPECT_EQ(f0.window, 16);
  EXPECT_EQ(f0.folded_channels(), 16);
  EXPECT_EQ(f0.folded_out_channels(), 256);
  // conv.3 of the 2 s BiLSTM (100 columns): 13 tiles of 8, each window 18 columns wide.
  const WidthFoldConv bilstm = make_conv(1, 32, 81, 100, 32, 21, 11, 2, 1, 10, 5, 5);
  const ops::WidthFold fb = width_fold_plan(bilstm, 8);
  EXPECT_EQ(fb.tiles, 13);
  EXPECT_EQ(fb.window, 18);
  EXPECT_EQ(fb.window_start, -5);
  EXPECT_NEAR(width_fold_work_ratio(fb), 18.0 * 13 * 8 / (11.0 * 100), 1e-12);
  EXPECT_TRUE(width_fold_applies(bilstm, 8));
  // One channel, odd window: widened to 8 columns.
  const WidthFoldConv odd = make_conv(1, 1, 10, 5, 8, 3, 5, 1, 1, 1, 2, 2);
  EXPECT_EQ(width_fold_plan(odd, 8).window, 8);
}

TEST(CudaWidthFold, FilterIsAToeplitzBandOfTheKernelColumns) {
  const WidthFoldConv c = make_conv(1, 2, 5, 6, 3, 2, 3, 1, 1, 0, 1, 1);  // OW 6, one tile
  const ops::WidthFold f = width_fold_plan(c, 8);
  ASSERT_EQ(f.tiles, 1);
  ASSERT_EQ(f.window, 8);  // 6 in-image columns, widened so that 2 x 8 is a multiple of 8
  std::vector<float> w(static_cast<std::size_t>(3 * 2 * 2 * 3));
  for (std::size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i + 1);
  const std::vector<float> folded = width_fold_filter(f, w.data());
  ASSERT_EQ(folded.size(), static_cast<std::size_t>(3 * 6 * 2 * 2 * 8));
  for (int oc = 0; oc < 3; ++oc)
    for (int tw = 0; tw < 6; ++tw)
      for (int r = 0; r < 2; ++r)
        for (int ch = 0; ch < 2; ++ch)
          for (int ws = 0; ws < 8; ++ws) {
            // Output tw reads columns tw - 1 .. tw + 1; columns 6 and 7 lie past the image (the
            // alignment widening), where the input is zero whatever the filter holds.
            const int kw = ws - tw + 1;
            const float expected =
                kw >= 0 && kw < 3 ? w[static_cast<std::size_t>(((oc * 2 + ch) * 2 + r) * 3 + kw)]
                                  : 0.0f;
            EXPECT_EQ(folded[static_cast<std::size_t>(((oc * 6 + tw) * 2 + r) * 16 + ch * 8 + ws)],
                      expected)
                << "oc " << oc << " tw " << tw << " r " << r << " c " << ch << " ws " << ws;
          }
}

TEST(CudaWidthFold, GemmTacticsBoundTheUnfoldedMatrix) {
  // conv.3 of a batch-256 chunk: A is 10,496 x 5,376 two-byte elements (113 MB).
  const WidthFoldConv conv3 = make_conv(256, 32, 81, 8, 32, 21, 11, 2, 1, 10, 5, 5);
  const ops::WidthFold f = width_fold_plan(conv3, 8);
  EXPECT_EQ(f.unfolded_rows(), 256 * 41);
  EXPECT_EQ(f.unfolded_columns(), 21 * 256);
  EXPECT_TRUE(width_fold_applies(conv3, 8, 2));
  EXPECT_TRUE(width_fold_applies(conv3, 8, 4));  // 226 MB in FP32
  // 3,000 such streams would need 1.3 GB of A at FP16: the GEMM tactics decline, cuDNN's still
  // apply; 1,500 fit at FP16, not at FP32.
  const WidthFoldConv big = make_conv(3000, 32, 81, 8, 32, 21, 11, 2, 1, 10, 5, 5);
  EXPECT_FALSE(width_fold_applies(big, 8, 2));
  EXPECT_TRUE(width_fold_applies(big, 8, 0));
  const WidthFoldConv half_big = make_conv(1500, 32, 81, 8, 32, 21, 11, 2, 1, 10, 5, 5);
  EXPECT_TRUE(width_fold_applies(half_big, 8, 2));
  EXPECT_FALSE(width_fold_applies(half_big, 8, 4));
}

TEST(CudaWidthFold, DeclinesWhatTheFoldDoesBadly) {
  // Asymmetric height pads (cuDNN's descriptor is symmetric).
  WidthFoldConv c = make_conv(1, 4, 9, 8, 4, 3, 3, 1, 1, 1, 1, 1);
  c.pad_bottom = 0;
  c.out_h = 8;
  EXPECT_FALSE(width_fold_applies(c, 8));
  // A kernel one column wide: tiles of 8 do 8x the work.
  EXPECT_FALSE(width_fold_applies(make_conv(1, 4, 9, 64, 4, 3, 1, 1, 1, 1, 0, 0), 8));
  // Too many folded channels: 512 x (7 + 10 + 1) columns.
  EXPECT_FALSE(width_fold_applies(make_conv(1, 512, 9, 64, 4, 3, 11, 1, 1, 1, 5, 5), 8));
  // DS2's conv.0 over 2 s (200 columns, stride 2): tiles of 8 read 25 columns for 8 outputs of
  // an 11-wide kernel, 2.3x the work, within the limit.
  EXPECT_TRUE(width_fold_applies(make_conv(1, 1, 161, 200, 32, 41, 11, 2, 2, 20, 5, 5), 8));
}

}  // namespace
}  // namespace voxrt::backends::cuda
