// Device code shared by the CUDA backend's .cu files: one UnaryOp applied to a float (the
// activations that the conv and GEMM epilogues fuse, and the elementwise kernels).
#pragma once

#include "backends/cuda/cuda_ops.h"

namespace voxrt::backends::cuda::ops {

__device__ __forceinline__ float apply_unary(UnaryOp op, float x, float alpha, float beta) {
  switch (op) {
    case UnaryOp::kIdentity: return x;
    case UnaryOp::kRelu: return x > 0.0f ? x : 0.0f;
    case UnaryOp::kLeakyRelu: return x >= 0.0f ? x : alpha * x;
    case UnaryOp::kClip: return fminf(fmaxf(x, alpha), beta);
    case UnaryOp::kSigmoid: return 1.0f / (1.0f + expf(-x));
    case UnaryOp::kTanh: return tanhf(x);
    case UnaryOp::kExp: return expf(x);
    case UnaryOp::kLog: return logf(x);
    case UnaryOp::kSqrt: return sqrtf(x);
    case UnaryOp::kNeg: return -x;
    case UnaryOp::kAbs: return fabsf(x);
    case UnaryOp::kReciprocal: return 1.0f / x;
    case UnaryOp::kErf: return erff(x);
    case UnaryOp::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case UnaryOp::kSoftplus: return log1pf(expf(-fabsf(x))) + fmaxf(x, 0.0f);
    case UnaryOp::kFloor: return floorf(x);
    case UnaryOp::kCeil: return ceilf(x);
    case UnaryOp::kHardSigmoid: return fmaxf(0.0f, fminf(1.0f, alpha * x + beta));
    case UnaryOp::kElu: return x >= 0.0f ? x : alpha * (expf(x) - 1.0f);
    case UnaryOp::kSilu: return x / (1.0f + expf(-x));
  }
  return x;
}

}  // namespace voxrt::backends::cuda::ops
