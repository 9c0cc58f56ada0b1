#include "backends/cpu/quantized/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/quantized/int8_product.h"

namespace voxrt::backends::cpu::quantized {
namespace {

constexpr int kTileRows = 6;
constexpr int kTilePanels = 4;

struct GemmArgs {
  const std::uint8_t* a;
  std::int64_t lda;
  const PackedInt8Weights* weights;
  const Int8Epilogue* epilogue;
  float* c;
  std::int64_t ldc;
};

template <int M, int P>
VOXRT_VNNI void gemm_tile(const GemmArgs& g, std::int64_t row, std::int64_t panel) {
  const std::uint8_t* a[M];
#pragma GCC unroll 6
  for (int m = 0; m < M; ++m) a[m] = g.a + (row + m) * g.lda;
  const PackedInt8Weights& w = *g.weights;
  const PanelLayout layout{w.data.data<std::int8_t>() + panel * w.quads * kPanelQuadBytes,
                           w.quads * kPanelQuadBytes, kPanelQuadBytes, w.quads};
  __m256i acc[M][P];
  int8_tile<M, P>(a, layout, acc);
  const Int8Epilogue& e = *g.epilogue;
#pragma GCC unroll 4
  for (int p = 0; p < P; ++p) {
    const std::int64_t col = (panel + p) * kPanelColumns;
    const std::int64_t valid = std::min<std::int64_t>(kPanelColumns, w.columns - col);
    const __mmask8 mask = static_cast<__mmask8>((1u << valid) - 1);
#pragma GCC unroll 6
    for (int m = 0; m < M; ++m) {
      const __m256 y =
          int8_dequantize(acc[m][p], e.zero_point_sums.data() + col, e.scales.data() + col,
                          e.bias.empty() ? nullptr : e.bias.data() + col);
      _mm256_mask_storeu_ps(g.c + (row + m) * g.ldc + col, mask, y);
    }
  }
}

template <int M>
VOXRT_VNNI void gemm_rows(const GemmArgs& g, std::int64_t row, std::int64_t panel_begin,
                          std::int64_t panel_end) {
  std::int64_t p = panel_begin;
  for (; p + kTilePanels <= panel_end; p += kTilePanels) gemm_tile<M, kTilePanels>(g, row, p);
  switch (panel_end - p) {
    case 3: gemm_tile<M, 3>(g, row, p); break;
    case 2: gemm_tile<M, 2>(g, row, p); break;
    case 1: gemm_tile<M, 1>(g, row, p); break;
    default: break;
  }
}

VOXRT_VNNI void gemm_vnni(const GemmArgs& g, std::int64_t rows, std::int64_t panel_begin,
                          std::int64_t panel_end) {
  // Panels outside, rows inside: a group of panels (4 x 32 bytes per quad) stays in L1/L2
  // while every row passes over it.
  for (std::int64_t p0 = panel_begin; p0 < panel_end; p0 += kTilePanels) {
    const std::int64_t p1 = std::min(panel_end, p0 + kTilePanels);
    std::int64_t r = 0;
    for (; r + kTileRows <= rows; r += kTileRows) gemm_rows<kTileRows>(g, r, p0, p1);
    switch (rows - r) {
      case 5: gemm_rows<5>(g, r, p0, p1); break;
      case 4: gemm_rows<4>(g, r, p0, p1); break;
      case 3: gemm_rows<3>(g, r, p0, p1); break;
      case 2: gemm_rows<2>(g, r, p0, p1); break;
      case 1: gemm_rows<1>(g, r, p0, p1); break;
      default: break;
    }
  }
}

}  // namespace

bool vnni_available() {
  static const bool available = cpu_has_avx512f() && __builtin_cpu_supports("avx512bw") &&
                                __builtin_cpu_supports("avx512vl") &&
                                __builtin_cpu_supports("avx512vnni");
  return available;
}

PackedInt8Weights pack_int8_weights(RowQuantizedWeights rows) {
  PackedInt8Weights w;
  w.columns = rows.rows;
  w.depth = rows.depth;
  w.quads = (rows.depth + kQuadBytes - 1) / kQuadBytes;
  w.panels = (rows.rows + kPanelColumns - 1) / kPanelColumns;
  w.data = Tensor::zeros(DType::kI8, {w.panels * w.quads * kPanelQuadBytes});
  w.weight_scales.assign(static_cast<std::size_t>(w.panels * kPanelColumns), 0.0f);
  w.column_sums.assign(static_cast<std::size_t>(w.panels * kPanelColumns), 0);
  std::int8_t* packed = w.data.data<std::int8_t>();
  for (std::int64_t col = 0; col < w.columns; ++col) {
    const std::int64_t panel = col / kPanelColumns, lane = col % kPanelColumns;
    const std::int8_t* row = rows.values.data() + col * w.depth;
    std::int32_t sum = 0;
    for (std::int64_t k = 0; k < w.depth; ++k) {
      packed[((panel * w.quads + k / kQuadBytes) * kPanelColumns + lane) * kQuadBytes +
             k % kQuadBytes] = row[k];
      sum += row[k];
    }
    w.column_sums[static_cast<std::size_t>(col)] = sum;
    w.weight_scales[static_cast<std::size_t>(col)] = rows.scales[static_cast<std::size_t>(col)];
  }
  w.rows = std::move(rows);
  return w;
}

Int8Epilogue make_int8_epilogue(const PackedInt8Weights& weights,
                                const ActivationQuantization& input, float alpha,
                                const float* bias) {
  Int8Epilogue e;
  const std::size_t padded = static_cast<std::size_t>(weights.panels * kPanelColumns);
  e.scales.assign(padded, 0.0f);
  e.zero_point_sums.assign(padded, 0);
  for (std::int64_t col = 0; col < weights.columns; ++col) {
    const auto i = static_cast<std::size_t>(col);
    e.scales[i] = input.scale * (alpha * weights.weight_scales[i]);
    e.zero_point_sums[i] = input.zero_point * weights.column_sums[i];
  }
  if (bias) {
    e.bias.assign(padded, 0.0f);
    std::copy_n(bias, weights.columns, e.bias.begin());
  }
  return e;
}

void int8_gemm_vnni(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                    const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
                    std::int64_t panel_begin, std::int64_t panel_end, float* c, std::int64_t ldc) {
  const GemmArgs g{a, lda, &weights, &epilogue, c, ldc};
  gemm_vnni(g, rows, panel_begin, panel_end);
}

void int8_gemm_reference(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                         const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
                         std::int64_t panel_begin, std::int64_t panel_end, float* c,
                         std::int64_t ldc) {
  const std::int64_t col_end = std::min(weights.columns, panel_end * kPanelColumns);
  for (std::int64_t m = 0; m < rows; ++m) {
    for (std::int64_t col = panel_begin * kPanelColumns; col < col_end; ++col) {
      const std::int8_t* w = weights.rows.values.data() + col * weights.depth;
      std::int32_t acc = 0;
      for (std::int64_t k = 0; k < weights.depth; ++k) acc += a[m * lda + k] * w[k];
      const auto i = static_cast<std::size_t>(col);
      c[m * ldc + col] =
          std::fma(static_cast<float>(acc - epilogue.zero_point_sums[i]), epilogue.scales[i],
                   epilogue.bias.empty() ? 0.0f : epilogue.bias[i]);
    }
  }
}

void quantize_rows_padded(const float* x, std::int64_t rows, std::int64_t depth, std::int64_t ld,
                          const ActivationQuantization& q, std::int64_t padded_depth,
                          std::uint8_t* out) {
  for (std::int64_t r = 0; r < rows; ++r) {
    std::uint8_t* row = out + r * padded_depth;
    quantize_activations(x + r * ld, depth, q, row);
    std::memset(row + depth, q.zero_point, static_cast<std::size_t>(padded_depth - depth));
  }
}

}  // namespace voxrt::backends::cpu::quantized
