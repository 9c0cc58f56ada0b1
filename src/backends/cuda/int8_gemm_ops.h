// Device steps of the CUDA INT8 dense layers around cuBLASLt's IMMA GEMM (int8_gemm.cu; their host
// references and the number formats are in int8_gemm_host.h).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/cuda_ops.h"

namespace voxrt::backends::cuda::ops {

// x: [rows][depth] floats -> out: [rows][padded_depth] int8, out = clamp(rint(x * inverse_scale) +
// zero_point, 0, 255) - 128 (NaN -> -128), the padding 0. One pass over x.
cudaError_t quantize_int8_rows(const float* x, std::int64_t rows, std::int64_t depth,
                               std::int64_t padded_depth, float inverse_scale, float zero_point,
                               std::int8_t* out, cudaStream_t stream);

// A convolution's input unfolded and quantized in one pass (the layout of int8_gemm_host.h's
// im2col_signed): out[m][k] for row m = (n, oy, ox) and k = (c, ky, kx) < depth the quantized x
// under that tap, `pad_value` where the tap falls in the padding, 0 for depth <= k < padded_depth.
struct Int8Im2col {
  std::int64_t batch = 0, channels = 0, height = 1, width = 0;
  std::int64_t kernel_h = 1, kernel_w = 1, out_h = 1, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_top = 0, pad_left = 0, dilation_h = 1,
               dilation_w = 1;
  std::int64_t depth = 0, padded_depth = 0;
  float inverse_scale = 1.0f, zero_point = 0.0f;
  std::int8_t pad_value = 0;
};
cudaError_t quantize_int8_im2col(const float* x, const Int8Im2col& g, std::int8_t* out,
                                 cudaStream_t stream);

// The epilogue: y[m][c] = op(fma(float(acc[m][c] - zero_point_sums[c]), scales[c], bias[c]))
// for c < columns (bias null: 0), acc: [rows][ld_acc] int32, y: [rows][columns] floats; with
// `positions` > 0 (a convolution: row m = n * positions + p) y is NCHW instead,
// y[n][c][p] = the value of row m, column c.
struct Int8Epilogue {
  const std::int32_t* acc = nullptr;
  std::int64_t rows = 0, columns = 0, ld_acc = 0;
  std::int64_t positions = 0;
  const float* scales = nullptr;
  const std::int32_t* zero_point_sums = nullptr;
  const float* bias = nullptr;
  UnaryOp op = UnaryOp::kIdentity;
  float alpha = 0.0f, beta = 0.0f;
};
cudaError_t int8_epilogue(const Int8Epilogue& e, float* y, cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
