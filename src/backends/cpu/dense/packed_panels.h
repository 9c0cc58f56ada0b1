// A constant right-hand operand packed for our AVX-512 few-row products (matmul_packed.cpp,
// conv_pointwise.cpp): B (times alpha) in panels of 64 columns, [N / 64][K][64] with the last
// panel zero-padded, so a product streams it front to back once. Rows of the left operand go six
// at a time through a 6 x 64 register block; bias, activation and clamp are applied in registers.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/dense/dense_common.h"

namespace voxrt::backends::cpu::dense {

inline constexpr std::int64_t kPanelColumns = 64;

struct PackedPanels {
  std::int64_t k = 0, n = 0;
  std::vector<float> data;
  std::vector<float> bias;  // one value per column, padded to whole panels; empty without
  std::int64_t panels() const { return (n + kPanelColumns - 1) / kPanelColumns; }
};

// B[kk][col] = b[kk * n + col] (or b[col * k + kk] when `transposed`), times alpha; `bias`
// (n values, may be null) is stored as is.
PackedPanels pack_panels(const float* b, std::int64_t k, std::int64_t n, bool transposed,
                         float alpha, const float* bias);

// Where a product reads its left operand and writes its result: element (row r, depth kk) of A
// at a[r * a_row + kk * a_depth]; element (r, col) of Y at y[r * y_row + col * y_col].
struct PanelProblem {
  const float* a = nullptr;
  std::int64_t a_row = 0, a_depth = 1;
  std::int64_t rows = 0;
  float* y = nullptr;
  std::int64_t y_row = 0, y_col = 1;
};

// Y = act(A x B + bias) for the columns of panels [panel_begin, panel_end). Needs AVX-512.
void run_panels(const PanelProblem& problem, const PackedPanels& b, const Activation& act,
                std::int64_t panel_begin, std::int64_t panel_end);

}  // namespace voxrt::backends::cpu::dense
