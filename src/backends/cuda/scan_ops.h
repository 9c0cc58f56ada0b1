// Launchers of the scan, selection and normalization kernels the Transformer-era exports add
// (scan_ops.cu): CumSum, TopK and InstanceNormalization. Plain types only, as cuda_ops.h. Each
// walks one axis of x as [outer, n, inner], one thread (CumSum) or one block (TopK, the norm) per
// (outer, inner) line, with the CPU reference's rules.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "backends/cuda/element_ops.h"

namespace voxrt::backends::cuda::ops {

// y = the running sum along the axis (exclusive: of the elements before; reverse: from the end).
// f32, i32, i64; integers wrap.
cudaError_t cumsum(ElemType type, const void* x, void* y, std::int64_t outer, std::int64_t n,
                   std::int64_t inner, bool exclusive, bool reverse, cudaStream_t stream);

// The k largest (or smallest) of each line in order, ties by the lower index first, as ONNX
// orders them; values [outer, k, inner] of x's type, indices i64. f32, i32, i64. Each of the k
// rounds is one pass over the line: meant for small k (beam widths), as exporters use it.
cudaError_t top_k(ElemType type, const void* x, void* values, std::int64_t* indices,
                  std::int64_t outer, std::int64_t n, std::int64_t inner, std::int64_t k,
                  bool largest, cudaStream_t stream);

// y = scale[c] (x - mean) / sqrt(var + epsilon) + bias[c] over each (n, c) slab of `spatial`
// elements (population variance; statistics in double, as the CPU reference keeps them).
cudaError_t instance_norm(const float* x, const float* scale, const float* bias, float* y,
                          std::int64_t slabs, std::int64_t channels, std::int64_t spatial,
                          float epsilon, cudaStream_t stream);

}  // namespace voxrt::backends::cuda::ops
