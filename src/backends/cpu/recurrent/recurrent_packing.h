// Gate-interleaved packed weights for the packed tactic. Hidden units are grouped in blocks of 8
// (one AVX register); a block's panel holds, for every k, the 8 units of each gate side by side:
// panel[k][gate][unit]. One thread owning a range of unit blocks thus reads one contiguous
// stretch of R per step and has every gate of its units at hand for the fused nonlinearity.
//
// R may be stored in FP16 (RecurrentWeightStorage::kFp16, the CPU's --precision fp16): at batch 1
// a step's cost is the bytes of R it reads (R is read whole every step and is larger than L2 for
// DS2's layers), so half the bytes is up to twice the speed. Arithmetic stays FP32; only each
// weight is rounded once, to FP16 (relative error at most 2^-11). W, the biases and the states
// stay FP32: the input projection is one compute-bound GEMM over all steps.
//
// Or R in INT8 (RecurrentWeightStorage::kInt8, layers the builder marked int8): a quarter of the
// bytes, symmetric per output row (int8_quantization.h), the panels in VNNI's quads
// (int8_product.h: [quad][gate][8 units][4 k]), each step's h quantized per row on the fly; and
// W in INT8 too, its projection an INT8 GEMM over the calibrated input quantization. Gates,
// cell and states stay FP32 (recurrent_int8_product.h).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "backends/cpu/quantized/int8_gemm.h"
#include "backends/cpu/recurrent/recurrent_spec.h"

namespace voxrt::backends::cpu::recurrent {

inline constexpr std::int64_t kUnitBlock = 8;

enum class RecurrentWeightStorage { kFp32, kFp16, kInt8 };

struct PackedPanels {
  int gates = 0;            // gates side by side in a panel row
  std::int64_t depth = 0;   // k extent (input_size or hidden_size)
  std::int64_t blocks = 0;  // unit blocks
  // [blocks][depth][gates][8], f32 or f16 (IEEE half bits), aligned; or i8
  // [blocks][depth / 4 rounded up][gates][8][4] with the two per-unit vectors below.
  Tensor data;
  std::vector<float> int8_scales;           // [blocks][gates][8]: each row's weight scale
  std::vector<std::int32_t> int8_row_sums;  // [blocks][gates][8]: 128 x each row's weight sum

  bool half() const { return data.dtype() == DType::kF16; }
  bool int8() const { return data.dtype() == DType::kI8; }
  std::int64_t quads() const { return (depth + 3) / 4; }
  // T = float for f32 panels, std::uint16_t for f16 ones.
  template <typename T>
  const T* panel(std::int64_t block) const {
    return data.data<T>() + block * depth * gates * kUnitBlock;
  }
};

struct PackedDirection {
  // W as a [input_size][blocks][gates][8] matrix (zero columns for padded units): the B operand
  // of the projection sgemm, whose product is then already in the projection layout.
  Tensor w_kn;
  PackedPanels r;            // all gates, or GRU z, r only when !linear_before_reset
  PackedPanels r_candidate;  // GRU without linear_before_reset: the h gate, applied to r (.) h
  // [blocks][gates][8]: W bias plus R bias, except the GRU h gate with linear_before_reset,
  // whose R bias sits inside r (.) (...) and lives in candidate_r_bias instead.
  std::vector<float> projection_bias;
  std::vector<float> candidate_r_bias;  // [blocks][8]
  std::vector<float> peephole;          // [blocks][3][8] (i, o, f), zeros when absent
  // INT8 storage: W as [blocks * gates * 8 columns] in the projection's order, and its folded
  // epilogue (the calibrated input quantization, projection_bias as the bias).
  std::optional<quantized::PackedInt8Weights> w_int8;
  quantized::Int8Epilogue w_int8_epilogue;
};

struct PackedWeights {
  std::vector<PackedDirection> directions;
  std::int64_t blocks = 0;
};

// w: [D, G*H, I], r: [D, G*H, H], b: [D, 2*G*H] or null, p: [D, 3*H] or null; R's panels are
// stored as `r_storage` says. kInt8 also quantizes W, for inputs quantized as `input` says.
PackedWeights pack_weights(const RecurrentSpec& spec, const Tensor& w, const Tensor& r,
                           const Tensor* b, const Tensor* p,
                           RecurrentWeightStorage r_storage = RecurrentWeightStorage::kFp32,
                           const quantized::ActivationQuantization* input_quantization = nullptr);

}  // namespace voxrt::backends::cpu::recurrent
