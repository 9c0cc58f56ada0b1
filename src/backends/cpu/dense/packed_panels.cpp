#include "backends/cpu/dense/packed_panels.h"

#include <algorithm>

#include "backends/cpu/dense/activation_avx512.h"

namespace voxrt::backends::cpu::dense {
namespace {

constexpr int kMaxRows = 6;  // rows per register block: 24 accumulators
// Row blocks that share one pass over a panel: up to 24 rows (a 16-frame chunk is 6 + 6 + 4).
constexpr int kGroupBlocks = 4;
// Depth of the slice of a panel that the row blocks of a group take in turn: 64 x 64 floats
// (16 KiB) stay in L1 while every block reads them, and the first block prefetches the next
// slice, so streaming the weights from memory overlaps the other blocks' arithmetic instead of
// each block waiting on its own pass over the whole panel.
constexpr std::int64_t kSliceDepth = 64;
// The first block also asks for the slice this many ahead (64 KiB) into the outer caches, so
// more of the stream from memory is in flight: a 16-row [256 x 1024] layer read cold took
// 0.15-0.16 ms instead of 0.20-0.22 with the next slice alone, the [1024 x 256] one no longer
// (dense_tactics --cold 96, load 1.5-3; 8 slices ahead did as well, 2 ahead or a T1 hint less
// consistently).
constexpr std::int64_t kFarSlices = 4;

// Accumulators of one row block over depths [k0, k1) of one panel: started from zero (first
// slice) or from `partial`, left in `partial` (not last slice) or finished into Y with bias and
// activation for columns [col0, col0 + cols).
template <int Rows>
VOXRT_AVX512 void panel_block(const PanelProblem& p, std::int64_t row0, const float* panel,
                              std::int64_t k0, std::int64_t k1, float* partial, bool first,
                              bool last, bool prefetch, const float* bias, const Activation& act,
                              std::int64_t col0, std::int64_t cols) {
  __m512 acc[Rows][4];
  for (int r = 0; r < Rows; ++r)
    for (int v = 0; v < 4; ++v)
      acc[r][v] =
          first ? _mm512_setzero_ps() : _mm512_loadu_ps(partial + r * kPanelColumns + 16 * v);
  const float* a = p.a + row0 * p.a_row;
  for (std::int64_t kk = k0; kk < k1; ++kk) {
    const float* b = panel + kk * kPanelColumns;
    if (prefetch) {
      const char* next = reinterpret_cast<const char*>(b + kSliceDepth * kPanelColumns);
      const char* far = reinterpret_cast<const char*>(b + kFarSlices * kSliceDepth * kPanelColumns);
      for (int line = 0; line < 4; ++line) {
        _mm_prefetch(next + 64 * line, _MM_HINT_T0);
        _mm_prefetch(far + 64 * line, _MM_HINT_T2);
      }
    }
    const __m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16),
                 b2 = _mm512_loadu_ps(b + 32), b3 = _mm512_loadu_ps(b + 48);
    for (int r = 0; r < Rows; ++r) {
      const __m512 x = _mm512_set1_ps(a[r * p.a_row + kk * p.a_depth]);
      acc[r][0] = _mm512_fmadd_ps(x, b0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(x, b1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(x, b2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(x, b3, acc[r][3]);
    }
  }
  if (!last) {
    for (int r = 0; r < Rows; ++r)
      for (int v = 0; v < 4; ++v) _mm512_storeu_ps(partial + r * kPanelColumns + 16 * v, acc[r][v]);
    return;
  }
  const __m512i lanes = _mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m512i column_step =
      _mm512_mullo_epi32(lanes, _mm512_set1_epi32(static_cast<int>(p.y_col)));
  for (int v = 0; v < 4; ++v) {
    const std::int64_t left = cols - 16 * v;
    if (left <= 0) break;
    const __mmask16 mask =
        left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512 b = bias ? _mm512_loadu_ps(bias + col0 + 16 * v) : _mm512_setzero_ps();
    for (int r = 0; r < Rows; ++r) {
      const __m512 out = activate(act, _mm512_add_ps(acc[r][v], b));
      float* y = p.y + (row0 + r) * p.y_row + (col0 + 16 * v) * p.y_col;
      if (p.y_col == 1) {
        _mm512_mask_storeu_ps(y, mask, out);
      } else {  // a channels-first output (pointwise convolution): one column a lane
        _mm512_mask_i32scatter_ps(y, mask, column_step, out, 4);
      }
    }
  }
}

// One block of `rows` (1..kMaxRows) rows.
VOXRT_AVX512 void any_block(int rows, const PanelProblem& p, std::int64_t row0, const float* panel,
                            std::int64_t k0, std::int64_t k1, float* partial, bool first, bool last,
                            bool prefetch, const float* bias, const Activation& act,
                            std::int64_t col0, std::int64_t cols) {
  switch (rows) {
    case 6:
      panel_block<6>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    case 5:
      panel_block<5>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    case 4:
      panel_block<4>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    case 3:
      panel_block<3>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    case 2:
      panel_block<2>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    case 1:
      panel_block<1>(p, row0, panel, k0, k1, partial, first, last, prefetch, bias, act, col0, cols);
      break;
    default: break;
  }
}

}  // namespace

PackedPanels pack_panels(const float* b, std::int64_t k, std::int64_t n, bool transposed,
                         float alpha, const float* bias) {
  PackedPanels packed;
  packed.k = k;
  packed.n = n;
  const std::int64_t panels = packed.panels();
  packed.data.assign(static_cast<std::size_t>(panels * k * kPanelColumns), 0.0f);
  for (std::int64_t p = 0; p < panels; ++p) {
    for (std::int64_t kk = 0; kk < k; ++kk) {
      float* dst = packed.data.data() + (p * k + kk) * kPanelColumns;
      for (std::int64_t j = 0; j < kPanelColumns && p * kPanelColumns + j < n; ++j) {
        const std::int64_t col = p * kPanelColumns + j;
        dst[j] = alpha * (transposed ? b[col * k + kk] : b[kk * n + col]);
      }
    }
  }
  if (bias) {
    packed.bias.assign(static_cast<std::size_t>(panels * kPanelColumns), 0.0f);
    std::copy(bias, bias + n, packed.bias.begin());
  }
  return packed;
}

VOXRT_AVX512 void run_panels(const PanelProblem& problem, const PackedPanels& b,
                             const Activation& act, std::int64_t panel_begin,
                             std::int64_t panel_end) {
  const float* bias = b.bias.empty() ? nullptr : b.bias.data();
  alignas(64) float partial[kGroupBlocks][kMaxRows * kPanelColumns];
  for (std::int64_t p = panel_begin; p < panel_end; ++p) {
    const float* panel = b.data.data() + p * b.k * kPanelColumns;
    const std::int64_t col0 = p * kPanelColumns;
    const std::int64_t cols = std::min(kPanelColumns, b.n - col0);
    for (std::int64_t group = 0; group < problem.rows; group += kGroupBlocks * kMaxRows) {
      const std::int64_t group_rows =
          std::min<std::int64_t>(kGroupBlocks * kMaxRows, problem.rows - group);
      const std::int64_t slices = std::max<std::int64_t>(1, (b.k + kSliceDepth - 1) / kSliceDepth);
      for (std::int64_t slice = 0; slice < slices; ++slice) {
        const std::int64_t k0 = slice * kSliceDepth, k1 = std::min(b.k, k0 + kSliceDepth);
        for (std::int64_t block = 0; block * kMaxRows < group_rows; ++block) {
          const int rows =
              static_cast<int>(std::min<std::int64_t>(kMaxRows, group_rows - block * kMaxRows));
          any_block(rows, problem, group + block * kMaxRows, panel, k0, k1, partial[block],
                    slice == 0, slice + 1 == slices, block == 0, bias, act, col0, cols);
        }
      }
    }
  }
}

}  // namespace voxrt::backends::cpu::dense
