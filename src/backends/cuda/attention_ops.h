// Launchers of the CUDA attention kernels (attention_simt.cu, attention_mma.cu); the shapes and
// launch plans are attention_launch.h's. Plain types only, as cuda_ops.h.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/attention_launch.h"
#include "backends/cuda/cuda_ops.h"

namespace voxrt::backends::cuda::ops {

struct AttentionOperands {
  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const void* mask = nullptr;  // bool or float per shape.mask, or null
  const float* bias = nullptr;
  float* out = nullptr;
  void* scratch = nullptr;  // plan.scratch_bytes, 16-byte aligned
};

// Runs `kernel` with `plan` (attention_plan(kernel, shape, ...), which must take it). `operand`:
// the element type the tensor-core kernels round Q, K and V to (kF16 or kBF16); the others
// compute in FP32 whatever it is. cudaErrorInvalidValue for a plan that does not take the shape.
cudaError_t attention(AttentionKernel kernel, const AttentionShape& shape,
                      const AttentionPlan& plan, LowType operand, const AttentionOperands& operands,
                      cudaStream_t stream);

// Lets the kernel use the shared memory `plan` gives it (above 48 KiB); call it when preparing,
// outside any graph capture.
cudaError_t attention_configure(AttentionKernel kernel, const AttentionShape& shape,
                                const AttentionPlan& plan);

// The tensor-core kernels (attention_mma.cu); attention() calls them.
cudaError_t attention_mma(const AttentionShape& shape, const AttentionPlan& plan, LowType operand,
                          const AttentionOperands& operands, cudaStream_t stream);

// The pipelined tensor-core kernels (attention_mma_pipelined.cu); attention() calls them. They
// need plan.scratch_bytes of scratch (the rounded K and V).
cudaError_t attention_mma_pipelined(const AttentionShape& shape, const AttentionPlan& plan,
                                    LowType operand, const AttentionOperands& operands,
                                    cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
