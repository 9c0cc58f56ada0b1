// 2-D (and 1-D as H = 1) convolution through cuDNN's implicit-GEMM algorithms: no im2col matrix
// in memory, which at batch 256 is what made the im2col tactic slow (docs/perf/gpu.md). The
// bias and any activation run after it in one pointwise pass (cuDNN's own fused form only takes
// ReLU), which also turns an FP16/BF16 result back to float.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

struct CudnnConvShape {
  std::int64_t batch = 0, channels = 0, height = 1, width = 0;
  std::int64_t out_channels = 0, kernel_h = 1, kernel_w = 0, out_h = 1, out_w = 0;
  std::int64_t stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  // Grouped convolution: channels and out_channels split into this many groups (the filter is
  // [out_channels, channels / groups, kh, kw]). The graph-API tactics take 1 only.
  std::int64_t groups = 1;
  // Type of x, w and y inside the call (x is converted from float, y back to float).
  ops::LowType data_type = ops::LowType::kF32;
  bool tf32 = false;  // float data: allow TF32 tensor cores
  // FP16/BF16 only: x, w and y inside the call are NHWC (KRSC for w), the layout Hopper's
  // tensor-core convolutions want. x is transposed on its conversion from float and y on its
  // way back, through shared memory, so the NCHW graph sees no difference.
  bool nhwc = false;
  // x and y are already in data_type (and NHWC when nhwc): the call runs cuDNN alone, on in[0]
  // and out[0] as they are, with no conversion and no epilogue (the width-fold tactics do their
  // own, conv_width_fold.h); its scratch is cuDNN's workspace.
  bool raw_io = false;
};

enum class CudnnConvAlgo {
  kHeuristic,            // cuDNN's own first choice for the shape
  kImplicitGemm,         // CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM
  kImplicitPrecompGemm,  // CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM
  kGemm,                 // CUDNN_CONVOLUTION_FWD_ALGO_GEMM (explicit im2col in the workspace)
  kFftTiling,            // CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING (not for strict FP32)
  kWinogradNonfused,     // CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED (not for strict FP32)
  kGraph                 // the graph API's graph_rank-th configuration (cudnn_graph_conv.h)
};

struct ConvEpilogue {
  const float* bias = nullptr;  // [out_channels] on the device, or null
  ops::UnaryOp op = ops::UnaryOp::kIdentity;
  float alpha = 0.0f, beta = 0.0f;
};

// weight: [out_channels, channels, kernel_h, kernel_w] on the device in shape.data_type, or
// [out_channels, kernel_h, kernel_w, channels] when shape.nhwc.
// Unsupported status when cuDNN is not loaded or does not take the shape with `algo`.
Expected<std::unique_ptr<CudaCall>> make_cudnn_conv_call(const CudnnConvShape& shape,
                                                         CudnnConvAlgo algo, const void* weight,
                                                         ConvEpilogue epilogue, int graph_rank = 0);

}  // namespace voxrt::backends::cuda
