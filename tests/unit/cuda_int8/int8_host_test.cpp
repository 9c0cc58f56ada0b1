// The host side of the CUDA INT8 GEMM against the CPU backend's INT8 GEMM: the same rounded int8
// values, and the same float results bit for bit, since a CUDA INT8 engine must compute what the
// CPU INT8 engine of the same calibration does.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/quantized/int8_quantization.h"
#include "backends/cuda/int8_gemm_host.h"

namespace voxrt {
namespace {

namespace cuda = backends::cuda;
namespace quantized = backends::cpu::quantized;

std::vector<float> normal_values(std::int64_t count, std::uint32_t seed, float sigma) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  std::vector<float> v(static_cast<std::size_t>(count));
  for (float& x : v) x = normal(rng);
  return v;
}

struct Shape {
  std::int64_t rows, depth, columns;
};
const Shape kShapes[] = {{1, 1, 1},  {1, 37, 1},  {1, 64, 3},  {3, 7, 2},
                         {5, 17, 3}, {8, 80, 24}, {2, 100, 17}};

TEST(CudaInt8Host, WeightsAreTheCpuValuesPaddedWithZeros) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message() << s.depth << " x " << s.columns);
    const std::vector<float> w = normal_values(s.columns * s.depth, 1, 0.3f);
    const auto input = quantized::ActivationQuantization::asymmetric(-1.5, 2.5);
    const std::vector<float> bias = normal_values(s.columns, 2, 0.1f);
    const cuda::Int8GemmLayer layer =
        cuda::make_int8_gemm_layer(w.data(), s.columns, s.depth, input, 0.5f, bias.data());
    EXPECT_EQ(layer.padded_depth % 16, 0);
    EXPECT_GE(layer.padded_depth, s.depth);
    EXPECT_LT(layer.padded_depth - s.depth, 16);
    EXPECT_EQ(layer.padded_columns % 4, 0);
    EXPECT_LT(layer.padded_columns - s.columns, 4);
    const quantized::RowQuantizedWeights cpu =
        quantized::quantize_rows(w.data(), s.columns, s.depth, s.depth);
    for (std::int64_t c = 0; c < layer.padded_columns; ++c) {
      for (std::int64_t k = 0; k < layer.padded_depth; ++k) {
        const std::int8_t want = c < s.columns && k < s.depth ? cpu.values[c * s.depth + k] : 0;
        ASSERT_EQ(layer.weights[static_cast<std::size_t>(c * layer.padded_depth + k)], want)
            << "column " << c << " k " << k;
      }
    }
    for (std::int64_t c = 0; c < s.columns; ++c) {
      const auto i = static_cast<std::size_t>(c);
      EXPECT_FLOAT_EQ(layer.scales[i], input.scale * 0.5f * cpu.scales[i]);
      std::int32_t sum = 0;
      for (std::int64_t k = 0; k < s.depth; ++k) sum += cpu.values[c * s.depth + k];
      EXPECT_EQ(layer.zero_point_sums[i], (input.zero_point - 128) * sum);
      EXPECT_EQ(layer.bias[i], bias[i]);
    }
  }
}

TEST(CudaInt8Host, SignedActivationIsTheCpuValueLess128) {
  const auto symmetric = quantized::ActivationQuantization::symmetric(3.0);
  const auto asymmetric = quantized::ActivationQuantization::asymmetric(-0.5, 4.0);
  std::vector<float> xs = normal_values(2000, 3, 3.0f);
  // Ties, the clamps, and NaN / infinities.
  for (const auto& q : {symmetric, asymmetric}) {
    for (int i = -300; i <= 300; ++i) xs.push_back((static_cast<float>(i) + 0.5f) * q.scale);
  }
  xs.insert(xs.end(),
            {0.0f, -0.0f, 1e9f, -1e9f, std::numeric_limits<float>::quiet_NaN(),
             std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()});
  for (const auto& q : {symmetric, asymmetric}) {
    for (float x : xs) {
      const int want = static_cast<int>(quantized::quantize_activation(x, q)) - 128;
      ASSERT_EQ(static_cast<int>(cuda::quantize_activation_signed(x, q)), want) << "x = " << x;
      ASSERT_GE(want, -128);
      ASSERT_LE(want, 127);
    }
  }
  EXPECT_EQ(cuda::quantize_activation_signed(0.0f, symmetric), 0);
  EXPECT_EQ(cuda::quantize_activation_signed(1e9f, symmetric), 127);
}

// The CUDA path's references (signed rows, int32 sums over the padded layout, the epilogue) give
// the CPU INT8 GEMM's floats exactly, for every shape, with and without bias.
TEST(CudaInt8Host, ReferencesGiveTheCpuInt8GemmBitForBit) {
  for (const Shape& s : kShapes) {
    for (const bool with_bias : {false, true}) {
      SCOPED_TRACE(testing::Message() << s.rows << " x " << s.depth << " x " << s.columns
                                      << (with_bias ? " with bias" : ""));
      const std::vector<float> w = normal_values(s.columns * s.depth, 4, 0.2f);
      const std::vector<float> x = normal_values(s.rows * s.depth, 5, 1.0f);
      const std::vector<float> bias = normal_values(s.columns, 6, 0.5f);
      const auto input = quantized::ActivationQuantization::asymmetric(-2.0, 1.5);
      const float* b = with_bias ? bias.data() : nullptr;
      const cuda::Int8GemmLayer layer =
          cuda::make_int8_gemm_layer(w.data(), s.columns, s.depth, input, 1.0f, b);
      const std::vector<std::int8_t> a = cuda::quantize_rows_signed(x.data(), s.rows, layer);
      const std::vector<std::int32_t> acc =
          cuda::int8_gemm_int32_reference(a.data(), s.rows, layer);

      const quantized::PackedInt8Weights packed = quantized::pack_int8_weights(
          quantized::quantize_rows(w.data(), s.columns, s.depth, s.depth));
      const quantized::Int8Epilogue epilogue =
          quantized::make_int8_epilogue(packed, input, 1.0f, b);
      std::vector<std::uint8_t> a_cpu(static_cast<std::size_t>(s.rows * packed.padded_depth()));
      quantized::quantize_rows_padded(x.data(), s.rows, s.depth, s.depth, input,
                                      packed.padded_depth(), a_cpu.data());
      std::vector<float> want(static_cast<std::size_t>(s.rows * s.columns));
      quantized::int8_gemm_reference(a_cpu.data(), packed.padded_depth(), s.rows, packed, epilogue,
                                     0, packed.panels, want.data(), s.columns);
      for (std::int64_t m = 0; m < s.rows; ++m) {
        for (std::int64_t c = 0; c < s.columns; ++c) {
          const float got = cuda::int8_dequantize(
              acc[static_cast<std::size_t>(m * layer.padded_columns + c)], layer, c);
          ASSERT_EQ(got, want[static_cast<std::size_t>(m * s.columns + c)])
              << "row " << m << " column " << c;
        }
        // The padding columns hold zero weights: their sums are 0.
        for (std::int64_t c = s.columns; c < layer.padded_columns; ++c)
          ASSERT_EQ(acc[static_cast<std::size_t>(m * layer.padded_columns + c)], 0);
      }
    }
  }
}

// Independently of the CPU code: the dequantized product is the float product within the
// quantization error (so a wrong scale, column order or padding in both would still fail).
TEST(CudaInt8Host, DequantizedProductIsTheFloatProductWithinTheQuantizationError) {
  const Shape s{6, 70, 5};
  const std::vector<float> w = normal_values(s.columns * s.depth, 7, 0.2f);
  const std::vector<float> x = normal_values(s.rows * s.depth, 8, 1.0f);
  const auto input = quantized::ActivationQuantization::symmetric(4.0);
  const cuda::Int8GemmLayer layer =
      cuda::make_int8_gemm_layer(w.data(), s.columns, s.depth, input, 1.0f, nullptr);
  const std::vector<std::int8_t> a = cuda::quantize_rows_signed(x.data(), s.rows, layer);
  const std::vector<std::int32_t> acc = cuda::int8_gemm_int32_reference(a.data(), s.rows, layer);
  double num = 0, den = 0;
  for (std::int64_t m = 0; m < s.rows; ++m) {
    for (std::int64_t c = 0; c < s.columns; ++c) {
      double exact = 0;
      for (std::int64_t k = 0; k < s.depth; ++k)
        exact += double{x[static_cast<std::size_t>(m * s.depth + k)]} *
                 w[static_cast<std::size_t>(c * s.depth + k)];
      const double got = cuda::int8_dequantize(
          acc[static_cast<std::size_t>(m * layer.padded_columns + c)], layer, c);
      num += (got - exact) * (got - exact);
      den += exact * exact;
    }
  }
  const double relative = std::sqrt(num / den);
  EXPECT_LT(relative, 0.03);
  EXPECT_GT(relative, 0.0);  // quantized, not the float product
}

}  // namespace
}  // namespace voxrt
