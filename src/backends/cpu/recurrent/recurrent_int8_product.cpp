#include "backends/cpu/recurrent/recurrent_int8_product.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace voxrt::backends::cpu::recurrent {
namespace {

using quantized::kPanelQuadBytes;

template <int G, int M>
VOXRT_VNNI void tile(const PackedPanels& panels, std::int64_t block, const QuantizedRows& q,
                     int row0, float* const* out) {
  const std::uint8_t* a[M];
#pragma GCC unroll 6
  for (int m = 0; m < M; ++m) a[m] = q.row(row0 + m);
  const quantized::PanelLayout layout{
      panels.data.data<std::int8_t>() + block * panels.quads() * G * kPanelQuadBytes,
      kPanelQuadBytes, G * kPanelQuadBytes, panels.quads()};
  __m256i acc[M][G];
  quantized::int8_tile<M, G>(a, layout, acc);
  const std::size_t base = static_cast<std::size_t>(block * G * kUnitBlock);
#pragma GCC unroll 4
  for (int g = 0; g < G; ++g) {
    const __m256 weight_scale = _mm256_loadu_ps(panels.int8_scales.data() + base + g * kUnitBlock);
    const __m256i sums = _mm256_loadu_si256(
        reinterpret_cast<const __m256i*>(panels.int8_row_sums.data() + base + g * kUnitBlock));
#pragma GCC unroll 6
    for (int m = 0; m < M; ++m) {
      const __m256 value = _mm256_cvtepi32_ps(_mm256_sub_epi32(acc[m][g], sums));
      const __m256 scale =
          _mm256_mul_ps(_mm256_set1_ps(q.scales[static_cast<std::size_t>(row0 + m)]), weight_scale);
      _mm256_storeu_ps(out[row0 + m] + g * kUnitBlock, _mm256_mul_ps(value, scale));
    }
  }
}

template <int G>
VOXRT_VNNI void rows_multiply(const PackedPanels& panels, std::int64_t block,
                              const QuantizedRows& q, int rows, float* const* out) {
  constexpr int kTile = G == 4 ? 5 : 6;
  int m = 0;
  for (; m + kTile <= rows; m += kTile) tile<G, kTile>(panels, block, q, m, out);
  switch (rows - m) {
    case 5:
      if constexpr (kTile > 5) tile<G, 5>(panels, block, q, m, out);
      break;
    case 4: tile<G, 4>(panels, block, q, m, out); break;
    case 3: tile<G, 3>(panels, block, q, m, out); break;
    case 2: tile<G, 2>(panels, block, q, m, out); break;
    case 1: tile<G, 1>(panels, block, q, m, out); break;
    default: break;
  }
}

}  // namespace

quantized::ActivationQuantization dynamic_row_quantization(const float* row, std::int64_t depth) {
  float max_abs = 0;
  for (std::int64_t k = 0; k < depth; ++k) max_abs = std::fmax(max_abs, std::fabs(row[k]));
  quantized::ActivationQuantization q;
  q.zero_point = 128;
  q.scale = max_abs > 0 && std::isfinite(max_abs) ? max_abs / 127.0f : 1.0f;
  return q;
}

void quantize_state_rows(const float* const* a, int rows, std::int64_t depth,
                         std::int64_t padded_depth, QuantizedRows& out) {
  out.stride = padded_depth;
  out.bytes.resize(static_cast<std::size_t>(rows * padded_depth));
  out.scales.resize(static_cast<std::size_t>(rows));
  for (int m = 0; m < rows; ++m) {
    const quantized::ActivationQuantization q = dynamic_row_quantization(a[m], depth);
    out.scales[static_cast<std::size_t>(m)] = q.scale;
    std::uint8_t* row = out.bytes.data() + m * padded_depth;
    quantized::quantize_activations(a[m], depth, q, row);
    std::memset(row + depth, 128, static_cast<std::size_t>(padded_depth - depth));
  }
}

void panels_multiply_int8(const PackedPanels& panels, std::int64_t block, const QuantizedRows& q,
                          int rows, float* const* out) {
  switch (panels.gates) {
    case 1: rows_multiply<1>(panels, block, q, rows, out); break;
    case 2: rows_multiply<2>(panels, block, q, rows, out); break;
    case 3: rows_multiply<3>(panels, block, q, rows, out); break;
    default: rows_multiply<4>(panels, block, q, rows, out); break;
  }
}

}  // namespace voxrt::backends::cpu::recurrent
