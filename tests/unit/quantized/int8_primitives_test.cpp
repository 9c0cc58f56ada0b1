// The INT8 formats and the GEMM: vectorized quantization equals the scalar form, the VNNI and AMX
// GEMMs equal the reference loops bit for bit, and these equal a float product of the rounded
// values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/quantized/int8_gemm_amx.h"
#include "backends/cpu/quantized/int8_quantization.h"

namespace voxrt::backends::cpu::quantized {
namespace {

std::vector<float> random_floats(std::size_t count, std::uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

TEST(Int8Quantization, SymmetricAndAsymmetricRanges) {
  const auto sym = ActivationQuantization::symmetric(2.54);
  EXPECT_EQ(sym.zero_point, 128);
  EXPECT_FLOAT_EQ(sym.scale, 0.02f);
  EXPECT_EQ(quantize_activation(0.0f, sym), 128);
  EXPECT_EQ(quantize_activation(2.54f, sym), 255);
  EXPECT_EQ(quantize_activation(-2.56f, sym), 0);
  EXPECT_EQ(quantize_activation(100.0f, sym), 255);  // clipped
  // A one-sided range uses every level, and zero stays exact (a convolution's padding).
  const auto relu = ActivationQuantization::asymmetric(0.0, 5.1);
  EXPECT_EQ(relu.zero_point, 0);
  EXPECT_EQ(quantize_activation(5.1f, relu), 255);
  EXPECT_EQ(quantize_activation(-1.0f, relu), 0);
  const auto shifted = ActivationQuantization::asymmetric(-1.0, 3.0);
  EXPECT_EQ(quantize_activation(0.0f, shifted), shifted.zero_point);
  EXPECT_NEAR(shifted.lowest(), -1.0, shifted.scale);
  EXPECT_NEAR(shifted.highest(), 3.0, shifted.scale);
  // A range that does not reach zero is widened to it.
  EXPECT_EQ(ActivationQuantization::asymmetric(2.0, 3.0).zero_point, 0);
  // Ties go to even, as the CPU's default rounding does.
  const ActivationQuantization unit{1.0f, 0};
  EXPECT_EQ(quantize_activation(2.5f, unit), 2);
  EXPECT_EQ(quantize_activation(3.5f, unit), 4);
  EXPECT_EQ(quantize_activation(std::nanf(""), unit), 0);
}

TEST(Int8Quantization, VectorizedEqualsScalar) {
  std::vector<float> x = random_floats(1003, 7, -3.0f, 3.0f);
  x[5] = std::nanf("");
  x[17] = INFINITY;
  x[18] = -INFINITY;
  x[40] = 0.5f * 0.02f;  // a tie
  for (const auto& q :
       {ActivationQuantization::symmetric(2.0), ActivationQuantization::asymmetric(-0.5, 2.5)}) {
    std::vector<std::uint8_t> fast(x.size());
    quantize_activations(x.data(), static_cast<std::int64_t>(x.size()), q, fast.data());
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(fast[i], quantize_activation(x[i], q)) << "element " << i << " = " << x[i];
  }
}

TEST(Int8Quantization, RowsAreSymmetricPerRow) {
  std::vector<float> w = random_floats(3 * 10, 3, -1.0f, 1.0f);
  w[10] = 4.0f;                                                         // row 1's largest
  for (int k = 20; k < 30; ++k) w[static_cast<std::size_t>(k)] = 0.0f;  // row 2 all zero
  const RowQuantizedWeights q = quantize_rows(w.data(), 3, 10, 10);
  EXPECT_FLOAT_EQ(q.scales[1], 4.0f / 127.0f);
  EXPECT_EQ(q.values[10], 127);
  EXPECT_FLOAT_EQ(q.scales[2], 1.0f);
  for (int r = 0; r < 3; ++r) {
    for (int k = 0; k < 10; ++k) {
      const auto i = static_cast<std::size_t>(r * 10 + k);
      EXPECT_LE(std::abs(q.values[i]), 127);
      EXPECT_NEAR(q.values[i] * q.scales[static_cast<std::size_t>(r)], w[i],
                  q.scales[static_cast<std::size_t>(r)] / 2 + 1e-7);
    }
  }
}

TEST(Int8Gemm, VnniEqualsReferenceBitForBit) {
  if (!vnni_available()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  struct Shape {
    std::int64_t rows, depth, columns;
  };
  std::uint32_t seed = 11;
  for (const Shape s : {Shape{1, 4, 8}, Shape{1, 512, 1536}, Shape{7, 13, 21}, Shape{16, 80, 29},
                        Shape{13, 1023, 33}, Shape{64, 160, 64}}) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.depth << "x" << s.columns);
    const std::vector<float> w =
        random_floats(static_cast<std::size_t>(s.columns * s.depth), seed++, -0.2f, 0.2f);
    const PackedInt8Weights packed =
        pack_int8_weights(quantize_rows(w.data(), s.columns, s.depth, s.depth));
    const std::vector<float> bias =
        random_floats(static_cast<std::size_t>(s.columns), seed++, -1, 1);
    const auto input = ActivationQuantization::asymmetric(-1.5, 2.0);
    const Int8Epilogue epilogue = make_int8_epilogue(packed, input, 0.75f, bias.data());
    const std::vector<float> x =
        random_floats(static_cast<std::size_t>(s.rows * s.depth), seed++, -2, 2.5);
    std::vector<std::uint8_t> a(static_cast<std::size_t>(s.rows * packed.padded_depth()));
    quantize_rows_padded(x.data(), s.rows, s.depth, s.depth, input, packed.padded_depth(),
                         a.data());
    const std::int64_t ldc = s.columns + 3;
    std::vector<float> fast(static_cast<std::size_t>(s.rows * ldc), -7.0f), slow = fast;
    int8_gemm_vnni(a.data(), packed.padded_depth(), s.rows, packed, epilogue, 0, packed.panels,
                   fast.data(), ldc);
    int8_gemm_reference(a.data(), packed.padded_depth(), s.rows, packed, epilogue, 0, packed.panels,
                        slow.data(), ldc);
    for (std::size_t i = 0; i < fast.size(); ++i) ASSERT_EQ(fast[i], slow[i]) << "element " << i;
    // Columns past the last one are left alone (ldc > columns).
    EXPECT_EQ(fast[static_cast<std::size_t>(s.columns)], -7.0f);
    // ... and both are the float product of the rounded operands.
    for (std::int64_t m = 0; m < s.rows; ++m) {
      for (std::int64_t c = 0; c < s.columns; ++c) {
        double sum = 0;
        for (std::int64_t k = 0; k < s.depth; ++k) {
          const double xq =
              (a[static_cast<std::size_t>(m * packed.padded_depth() + k)] - input.zero_point) *
              double{input.scale};
          const double wq = packed.rows.values[static_cast<std::size_t>(c * s.depth + k)] *
                            double{packed.rows.scales[static_cast<std::size_t>(c)]};
          sum += xq * wq;
        }
        const double want = 0.75 * sum + bias[static_cast<std::size_t>(c)];
        ASSERT_NEAR(fast[static_cast<std::size_t>(m * ldc + c)], want,
                    1e-4 + 1e-5 * std::fabs(want));
      }
    }
  }
}

// The AMX GEMM against the reference on the same rounded operands: shapes with a partial 16-row
// tile, depths that are not whole 64-byte steps (A's rows padded as the runner pads them) and
// columns that end inside a group of 64 and inside a tile of 16; a column range in the middle
// (what a thread of the pool gets) writes only its columns.
TEST(Int8Gemm, AmxEqualsReferenceBitForBit) {
  if (!amx_int8_available()) GTEST_SKIP() << "no AMX-INT8 on this CPU (or the kernel denies it)";
  struct Shape {
    std::int64_t rows, depth, columns;
  };
  std::uint32_t seed = 41;
  for (const Shape s :
       {Shape{1, 4, 8}, Shape{16, 256, 1024}, Shape{16, 1024, 256}, Shape{7, 13, 21},
        Shape{16, 80, 29}, Shape{13, 1023, 33}, Shape{40, 160, 200}}) {
    SCOPED_TRACE(testing::Message() << s.rows << "x" << s.depth << "x" << s.columns);
    const std::vector<float> w =
        random_floats(static_cast<std::size_t>(s.columns * s.depth), seed++, -0.2f, 0.2f);
    const PackedInt8Weights packed =
        pack_int8_weights(quantize_rows(w.data(), s.columns, s.depth, s.depth));
    const AmxInt8Weights tiles = pack_amx_int8_weights(packed);
    ASSERT_EQ(tiles.groups, (s.columns + 63) / 64);
    ASSERT_EQ(tiles.padded_depth() % 64, 0);
    const std::vector<float> bias =
        random_floats(static_cast<std::size_t>(s.columns), seed++, -1, 1);
    const auto input = ActivationQuantization::asymmetric(-1.5, 2.0);
    const Int8Epilogue epilogue = make_int8_epilogue(packed, input, 0.75f, bias.data());
    const std::vector<float> x =
        random_floats(static_cast<std::size_t>(s.rows * s.depth), seed++, -2, 2.5);
    // A for the reference (rows of padded_depth()) and for AMX (whole 16-row tiles of 64-byte
    // steps; the bytes past depth hold 0xff, which must meet zero weights).
    std::vector<std::uint8_t> a(static_cast<std::size_t>(s.rows * packed.padded_depth()));
    quantize_rows_padded(x.data(), s.rows, s.depth, s.depth, input, packed.padded_depth(),
                         a.data());
    const std::int64_t lda = tiles.padded_depth();
    const std::int64_t tile_rows = (s.rows + 15) / 16 * 16;
    std::vector<std::uint8_t> a_tiles(static_cast<std::size_t>(tile_rows * lda), 0xff);
    for (std::int64_t m = 0; m < s.rows; ++m) {
      std::copy_n(a.begin() + m * packed.padded_depth(), s.depth, a_tiles.begin() + m * lda);
    }
    const std::int64_t ldc = s.columns + 3;
    std::vector<float> fast(static_cast<std::size_t>(s.rows * ldc), -7.0f), slow = fast;
    int8_gemm_amx(a_tiles.data(), lda, s.rows, tiles, epilogue, 0, tiles.groups, fast.data(), ldc);
    int8_gemm_reference(a.data(), packed.padded_depth(), s.rows, packed, epilogue, 0, packed.panels,
                        slow.data(), ldc);
    for (std::size_t i = 0; i < fast.size(); ++i) ASSERT_EQ(fast[i], slow[i]) << "element " << i;
    EXPECT_EQ(fast[static_cast<std::size_t>(s.columns)], -7.0f);
    if (tiles.groups >= 3) {
      std::vector<float> middle(fast.size(), -7.0f);
      int8_gemm_amx(a_tiles.data(), lda, s.rows, tiles, epilogue, 1, 2, middle.data(), ldc);
      for (std::int64_t m = 0; m < s.rows; ++m) {
        for (std::int64_t c = 0; c < s.columns; ++c) {
          const auto i = static_cast<std::size_t>(m * ldc + c);
          ASSERT_EQ(middle[i], c >= 64 && c < 128 ? slow[i] : -7.0f) << m << ", " << c;
        }
      }
    }
  }
}

}  // namespace
}  // namespace voxrt::backends::cpu::quantized
