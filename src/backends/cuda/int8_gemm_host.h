// The host side of the CUDA backend's INT8 dense layers (int8_gemm.cpp runs them, int8_gemm.cu
// holds the device code): which layers take INT8, the weights quantized and laid out for a
// cuBLASLt IMMA GEMM, the epilogue's per-column constants, and plain host references of what the
// device computes. No CUDA call here: the unit test unit_cuda_int8 runs all of it on the CPU.
//
// The numbers are the CPU backend's (cpu/quantized/int8_quantization.h), so a CUDA INT8 engine
// computes what a CPU INT8 engine of the same calibration computes:
//  - weights per output column, symmetric int8 in [-127, 127] (quantize_rows);
//  - the activation per tensor with the calibrated scale and zero point as unsigned 8-bit, then
//    shifted by -128 into the signed int8 that IMMA multiplies (q_s = q_u - 128): the same
//    rounded values;
//  - the int32 sum of q_s * w, exact; then y = fma(float(acc - (zp - 128) * colsum), scale, bias)
//    with scale = input scale * alpha * weight scale: acc - (zp - 128) * colsum equals the CPU's
//    acc_u - zp * colsum, so the float result is the CPU's bit for bit before the activation.
// Layout (cuBLASLt's "TN" IMMA form with the plain column order, which is what it takes for int8
// without the COL32 layouts): the weight as [padded_columns][padded_depth] int8 rows (each output
// column's depth contiguous, op(A) = A^T), the activation as [rows][padded_depth] int8 rows, the
// int32 result as [rows][padded_columns]. Depth is padded to kInt8DepthMultiple and columns to
// kInt8ColumnMultiple with zeros (cuBLASLt wants leading dimensions that are multiples of 4 bytes
// / 4 elements for int8; 16 keeps every row 16-byte aligned).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu/quantized/int8_quantization.h"
#include "ir/graph.h"
#include "voxrt/status.h"

namespace voxrt::backends::cuda {

inline constexpr std::int64_t kInt8DepthMultiple = 16;
inline constexpr std::int64_t kInt8ColumnMultiple = 4;

inline std::int64_t round_up_to(std::int64_t value, std::int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

// Whether the CUDA backend runs this layer in INT8 once calibrated: MatMul / FusedMatMul / Gemm
// with f32 data, a constant 2-D weight, A not transposed, no bias or a constant bias of one value
// per output column (or one value); Conv / FusedConv, 1-D or 2-D, group 1, constant weights and
// bias, explicit pads (auto_pad NOTSET or VALID), as one GEMM over the unfolded input (each output
// position a row, its C x KH x KW window the depth; a 1 x 1 convolution's window is its C
// channels). Both with an activation the epilogue applies.
bool cuda_int8_applies(const ir::Node& node);

// A layer's INT8 GEMM, prepared once at load.
struct Int8GemmLayer {
  std::int64_t columns = 0, depth = 0;                // N, K of the layer
  std::int64_t padded_columns = 0, padded_depth = 0;  // as stored and multiplied
  cpu::quantized::ActivationQuantization input;       // calibrated (unsigned form)
  std::vector<std::int8_t> weights;                   // [padded_columns][padded_depth], zero pad
  std::vector<float> scales;                          // [columns]: input scale * alpha * w scale
  std::vector<std::int32_t> zero_point_sums;          // [columns]: (zp - 128) * column sum
  std::vector<float> bias;                            // [columns] (beta folded in), or empty
};

// From weights as one row of `depth` values per output column (row c at w_rows + c * depth).
Int8GemmLayer make_int8_gemm_layer(const float* w_rows, std::int64_t columns, std::int64_t depth,
                                   const cpu::quantized::ActivationQuantization& input, float alpha,
                                   const float* bias);
// From a node marked int8 by the builder (its calibrated input quantization and constant
// weights); an error names the node and what is missing.
Expected<Int8GemmLayer> make_int8_gemm_layer(const ir::Node& node);

// A convolution as the INT8 GEMM sees it (1-D: h = kh = oh = 1). Row m = (n, oy, ox) of the
// unfolded input, depth index k = (c, ky, kx), the weight's own [OC, C, KH, KW] order.
struct Int8ConvGeometry {
  std::int64_t batch = 0, channels = 0, height = 1, width = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, out_h = 1, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1,
               dilation_w = 1;
  std::int64_t rows() const { return batch * out_h * out_w; }
};
// From the node's attributes and its input / output dims (NCW or NCHW); an error names the node.
Expected<Int8ConvGeometry> int8_conv_geometry(const ir::Node& node, const Dims& x, const Dims& y);

// The signed activation value the device's quantize kernel writes for x.
std::int8_t quantize_activation_signed(float x, const cpu::quantized::ActivationQuantization& q);

// Host references of the device steps. x: [rows][depth] floats -> [rows][padded_depth] int8 (the
// padding 0).
std::vector<std::int8_t> quantize_rows_signed(const float* x, std::int64_t rows,
                                              const Int8GemmLayer& layer);
// The unfolded, quantized input of a convolution: [rows][padded_depth] int8, a padding tap the
// quantized value of 0 (zero point - 128: the zero-point correction counts it as 0.0), the depth
// padding 0.
std::vector<std::int8_t> im2col_signed(const float* x, const Int8ConvGeometry& g,
                                       const Int8GemmLayer& layer);
// acc[m][c] = sum_k a[m][k] * w[c][k] over the padded depth: [rows][padded_columns].
std::vector<std::int32_t> int8_gemm_int32_reference(const std::int8_t* a, std::int64_t rows,
                                                    const Int8GemmLayer& layer);
// The epilogue before the activation, for one element.
float int8_dequantize(std::int32_t acc, const Int8GemmLayer& layer, std::int64_t column);

}  // namespace voxrt::backends::cuda
