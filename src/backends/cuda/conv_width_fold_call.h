// The width-fold conv tactics at run time (the fold itself: conv_width_fold.h): fold x into the
// operand type, run the folded convolution, write y with the bias and activation. The folded
// convolution is either cuDNN's NHWC convolution over the height or, after unfolding the folded
// input along the height, one cuBLASLt GEMM with the folded filter. Every intermediate lives in
// the call's scratch.
#pragma once

#include <memory>

#include "backends/cuda/conv_width_fold.h"
#include "backends/cuda/cuda_common.h"
#include "backends/cuda/cudnn_conv.h"

namespace voxrt::backends::cuda {

// filter: the folded filter (width_fold_filter) on the device in `operand` (kF16 or kBF16).
// Unsupported when cuDNN is not loaded or declines the folded shape with `algo`.
Expected<std::unique_ptr<CudaCall>> make_width_fold_cudnn_call(const ops::WidthFold& fold,
                                                               ops::LowType operand,
                                                               CudnnConvAlgo algo,
                                                               const void* filter,
                                                               ConvEpilogue epilogue);

// filter as above in `operand` (any; kF32 with `tf32` allows TF32 tensor cores); candidate: the
// index into cuBLASLt's heuristic list (LtGemm::create).
Expected<std::unique_ptr<CudaCall>> make_width_fold_gemm_call(const ops::WidthFold& fold,
                                                              ops::LowType operand, bool tf32,
                                                              int candidate, const void* filter,
                                                              ConvEpilogue epilogue,
                                                              cublasLtHandle_t lt);

}  // namespace voxrt::backends::cuda
