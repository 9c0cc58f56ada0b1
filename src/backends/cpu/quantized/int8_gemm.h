// C = dequantize(A_u8 x W_s8) + bias: the INT8 GEMM of the quantized dense kernels and of the
// recurrent kernels' input projection. W is a layer's constant weights, quantized per output
// column and packed once into 8-column panels (int8_product.h); A is the activation, quantized
// per tensor (int8_quantization.h) into rows padded to whole quads. Two implementations with
// identical results (the int32 sums are exact and the epilogue is the same fused multiply-add):
// the AVX-512 VNNI one and the reference, plain loops over the unpacked values.
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/quantized/int8_quantization.h"
#include "voxrt/tensor.h"

namespace voxrt::backends::cpu::quantized {

// Whether this CPU runs AVX-512 F/BW/VL and VNNI (once per process).
bool vnni_available();

struct PackedInt8Weights {
  std::int64_t columns = 0, depth = 0;
  std::int64_t quads = 0;                 // depth rounded up to quads of 4
  std::int64_t panels = 0;                // columns rounded up to panels of 8
  Tensor data;                            // i8 [panels][quads][8][4]; zero past depth and columns
  std::vector<float> weight_scales;       // [panels * 8], 0 past columns
  std::vector<std::int32_t> column_sums;  // [panels * 8]
  RowQuantizedWeights rows;               // the same values, one row per column (the reference)

  // Bytes per activation row the kernels read: quads * 4.
  std::int64_t padded_depth() const { return quads * 4; }
};

// `rows`: one row of `depth` weights per output column (ONNX's [out, in] layouts).
PackedInt8Weights pack_int8_weights(RowQuantizedWeights rows);

// A layer's per-column constants for its calibrated input quantization, folded once:
// y[c] = fma(float(acc[c] - zero_point_sums[c]), scales[c], bias[c]).
struct Int8Epilogue {
  std::vector<float> scales;                  // input scale * (alpha * weight scale)
  std::vector<std::int32_t> zero_point_sums;  // input zero point * column sum
  std::vector<float> bias;                    // empty: none
};
// `bias`: `columns` floats (already multiplied by Gemm's beta) or null.
Int8Epilogue make_int8_epilogue(const PackedInt8Weights& weights,
                                const ActivationQuantization& input, float alpha,
                                const float* bias);

// c[m * ldc + col] for rows [0, rows) and the columns of panels [panel_begin, panel_end); row m
// of A starts at a + m * lda and has padded_depth() bytes (what lies past depth is ignored).
void int8_gemm_vnni(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                    const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
                    std::int64_t panel_begin, std::int64_t panel_end, float* c, std::int64_t ldc);
void int8_gemm_reference(const std::uint8_t* a, std::int64_t lda, std::int64_t rows,
                         const PackedInt8Weights& weights, const Int8Epilogue& epilogue,
                         std::int64_t panel_begin, std::int64_t panel_end, float* c,
                         std::int64_t ldc);

// Quantizes `rows` rows of `depth` floats (row stride ld) into rows of padded_depth bytes; the
// padding bytes are the zero point.
void quantize_rows_padded(const float* x, std::int64_t rows, std::int64_t depth, std::int64_t ld,
                          const ActivationQuantization& q, std::int64_t padded_depth,
                          std::uint8_t* out);

}  // namespace voxrt::backends::cpu::quantized
