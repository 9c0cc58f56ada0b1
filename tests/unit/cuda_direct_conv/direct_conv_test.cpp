// The direct_tc tactic's host side (conv_direct.h), on the CPU: the [k_padded, OC] filter matrix
// element by element, the qualification rule, and the kernel's gather (direct_conv_tap,
// direct_conv_window, direct_conv_input, run here through direct_conv_reference) times the filter
// matrix against a direct convolution, with strides, dilations and asymmetric pads; and the same
// through the region path (the tile's input rows staged once, direct_conv_region_*, run here
// through direct_conv_region_reference), its geometry and which shapes take it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "backends/cuda/conv_direct.h"
#include "support/direct_conv_oracle.h"

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

// y [B, OC, OH, OW] straight from x and w (the shared oracle).
std::vector<float> direct_conv(const ConvCase& s, const std::vector<float>& x,
                               const std::vector<float>& w) {
  test::ConvGeometry g;
  g.batch = s.batch;
  g.channels = s.channels;
  g.height = s.height;
  g.width = s.width;
  g.out_channels = s.out_channels;
  g.kernel_h = s.kernel_h;
  g.kernel_w = s.kernel_w;
  g.out_h = s.out_h();
  g.out_w = s.out_w();
  g.stride_h = s.stride_h;
  g.stride_w = s.stride_w;
  g.pad_top = s.pad_top;
  g.pad_left = s.pad_left;
  g.dilation_h = s.dilation_h;
  g.dilation_w = s.dilation_w;
  return test::direct_conv_oracle(g, x, w);
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

const std::vector<ConvCase>& gather_cases() {
  static const std::vector<ConvCase> cases = {
      // DS2's conv.0 at a streaming chunk (C 1, 41 x 11, stride 2, pads 20 / 5), reduced height.
      {2, 1, 61, 16, 32, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1},
      // Two channels, dilation_w 2, asymmetric pads, a partial last tile of 64 positions.
      {3, 2, 13, 11, 16, 3, 5, 1, 1, 1, 2, 0, 3, 1, 2},
      // Strides larger than the kernel and a padding beyond it on one side only.
      {1, 3, 9, 10, 16, 2, 3, 3, 2, 0, 4, 2, 0, 2, 1},
      // Valid convolution, K a multiple of 16.
      {2, 4, 8, 8, 64, 2, 2, 1, 1, 0, 0, 0, 0, 1, 1},
      // OW 26 (not dividing 64): tiles span 3 or 4 output rows, starting mid-row.
      {2, 3, 12, 26, 32, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1},
      // OW 40, stride 2 x 1, dilation_h 2: tiles span 2 and 3 output rows.
      {1, 2, 17, 40, 16, 3, 3, 2, 1, 2, 1, 1, 1, 2, 1},
  };
  return cases;
}

using Reference = std::vector<float> (*)(const ops::DirectConv&, const float*,
                                         const std::vector<float>&);

void expect_convolution(Reference reference) {
  std::mt19937 rng(7);
  for (const ConvCase& c : gather_cases()) {
    SCOPED_TRACE(testing::Message() << "C " << c.channels << " kernel " << c.kernel_h << "x"
                                    << c.kernel_w << " out " << c.out_h() << "x" << c.out_w());
    const auto x =
        random_values(static_cast<std::size_t>(c.batch * c.channels * c.height * c.width), rng);
    const auto w = random_values(
        static_cast<std::size_t>(c.out_channels * c.channels * c.kernel_h * c.kernel_w), rng);
    const std::vector<float> want = direct_conv(c, x, w);
    const std::vector<float> got =
        reference(c.shape(), x.data(),
                  direct_conv_filter(w.data(), c.out_channels, c.channels, c.kernel_h, c.kernel_w));
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4 * (1.0 + std::fabs(want[i]))) << "element " << i;
  }
}

TEST(CudaDirectConv, GatherTimesFilterMatrixIsTheConvolution) {
  expect_convolution(&direct_conv_reference);
}

// The region reference fills the region with NaN before staging it and reads NaN outside it, so
// a tap or base that leaves the region, or an element the fill misses, fails here.
TEST(CudaDirectConv, RegionGatherTimesFilterMatrixIsTheConvolution) {
  expect_convolution(&direct_conv_region_reference);
}

TEST(CudaDirectConv, RegionCoversTheTilesRowsAndTheReadColumns) {
  // DS2's conv.0 at batch 256, 16 frames: 81 x 8 outputs, each tile exactly 8 output rows.
  const ConvCase ds2{256, 1, 161, 16, 32, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1};
  ops::DirectConvRegion g = direct_conv_region(ds2.shape());
  EXPECT_EQ(g.out_rows, 8);
  EXPECT_EQ(g.rows, 55);  // 7 * 2 + 40 + 1
  EXPECT_EQ(g.cols, 25);  // 7 * 2 + 10 + 1: iw -5 .. 19 (the last padding column is never read)
  EXPECT_EQ(g.zero(ds2.shape()), 1375);
  // A 2 s utterance (200 frames): 100 outputs a row, a tile spans 2 rows.
  const ConvCase long_ds2{1, 1, 161, 200, 32, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1};
  g = direct_conv_region(long_ds2.shape());
  EXPECT_EQ(g.out_rows, 2);
  EXPECT_EQ(g.rows, 43);
  EXPECT_EQ(g.cols, 209);
  // OW 26: tile 0 covers output rows 0..2, tile 2 (positions 128..191) rows 4..7.
  g = direct_conv_region(gather_cases()[4].shape());
  EXPECT_EQ(g.out_rows, 4);
  EXPECT_EQ(g.rows, 6);
  EXPECT_EQ(g.cols, 28);
  // Taps: (c, r, s) -> c * rows * cols + r * dilation_h * cols + s * dilation_w; past K none.
  const ops::DirectConv dilated = gather_cases()[5].shape();  // C 2, 3 x 3, dilation_h 2
  g = direct_conv_region(dilated);
  EXPECT_EQ(ops::direct_conv_region_tap(dilated, g, 0), 0);
  EXPECT_EQ(ops::direct_conv_region_tap(dilated, g, 5), 1 * 2 * g.cols + 2);
  EXPECT_EQ(ops::direct_conv_region_tap(dilated, g, 9 + 7), g.rows * g.cols + 2 * 2 * g.cols + 1);
  for (int k = 18; k < 32; ++k) {
    EXPECT_EQ(ops::direct_conv_region_tap(dilated, g, k), ops::kDirectConvRegionNoTap) << k;
    EXPECT_EQ(ops::direct_conv_region_index(g.zero(dilated), 17, ops::kDirectConvRegionNoTap),
              g.zero(dilated));
  }
  // Position (oh, ow) of the tile starting at output row 2: ((oh - 2) * stride_h) * cols + ow.
  EXPECT_EQ(ops::direct_conv_region_base(dilated, g, 2, 3, 5), 2 * g.cols + 5);
}

TEST(CudaDirectConv, RegionPathWhenItFitsTheSharedMemoryBudget) {
  // DS2's conv.0, 16 and 200 frames: a few KB of region next to the 37 KB filter.
  for (const int frames : {16, 200}) {
    const ConvCase c{256, 1, 161, frames, 32, 41, 11, 2, 2, 20, 5, 20, 5, 1, 1};
    const ops::DirectConvLayout l = direct_conv_plan(c.shape());
    EXPECT_TRUE(l.region) << frames;
    EXPECT_LE(l.bytes, kDirectConvRegionPreferredBytes) << frames;
    EXPECT_EQ(l.region_offset % 16, 0);
  }
  // K 1024, OC 64: the filter alone takes 144 KB (one block per SM either way); the region
  // (4 x 20 x 20) still fits under 200 KB.
  const ConvCase k1024{1, 4, 20, 20, 64, 16, 16, 1, 1, 0, 0, 0, 0, 1, 1};
  const ops::DirectConvLayout big = direct_conv_plan(k1024.shape());
  EXPECT_TRUE(big.region);
  EXPECT_GT(ops::direct_conv_layout(k1024.shape(), {}, false).bytes,
            kDirectConvRegionPreferredBytes);
  EXPECT_LE(big.bytes, kDirectConvRegionMaxBytes);
  // A 1000-wide input under a 64-row kernel: 65 x 1000 halves of region (130 KB) would halve
  // the blocks per SM; the gather path runs.
  const ConvCase wide{1, 1, 70, 1000, 16, 64, 4, 1, 1, 0, 0, 0, 0, 1, 1};
  const ops::DirectConvLayout fallback = direct_conv_plan(wide.shape());
  EXPECT_FALSE(fallback.region);
  EXPECT_EQ(fallback.bytes, ops::direct_conv_layout(wide.shape(), {}, false).bytes);
  // 1024 channels of 65536 columns: 64 M elements of region (its size checked in 64 bits).
  const ConvCase huge{1, 1024, 64, 65536, 16, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1};
  EXPECT_FALSE(direct_conv_plan(huge.shape()).region);
}

}  // namespace
}  // namespace voxrt::backends::cuda
