// Device pieces shared by the recurrent kernels (recurrent_ops.cu, recurrent_tc.cu): the ONNX
// cell update of one unit, and the arrival barrier of the persistent launches.
#pragma once

#include <cuda_runtime.h>

namespace voxrt::backends::cuda::ops {

// kFast: exp2 on the special function unit and an IEEE reciprocal instead of expf and a full
// division (a few instructions instead of ~30), for the persistent kernel, whose gate update is
// on the critical path of every recurrent step. Its outputs passed the gpu tests' FP32 limit
// (2e-5) and the FP32 BiLSTM stayed 2.9e-6 from PyTorch, as with the accurate path.
template <bool kFast = false>
__device__ __forceinline__ float sigmoid(float x) {
  if constexpr (kFast) return __frcp_rn(1.0f + __expf(-x));
  return 1.0f / (1.0f + expf(-x));
}
// tanh(x) = 2 sigmoid(2x) - 1: absolute error ~2e-7 on the fast path.
template <bool kFast = false>
__device__ __forceinline__ float tanh_of(float x) {
  if constexpr (kFast) return 2.0f * sigmoid<true>(2.0f * x) - 1.0f;
  return tanhf(x);
}

// x[g]: input projection (biases folded in), r[g]: recurrent projection, per gate.
// Returns h; updates *c for LSTM.
template <bool kFast = false>
__device__ __forceinline__ float cell_update(int gates, const float* x, const float* r,
                                             float h_prev, float* c, float rbn) {
  if (gates == 3) {  // GRU z, r, h; linear_before_reset: r * (Rh h + Rbh)
    const float z = sigmoid<kFast>(x[0] + r[0]);
    const float reset = sigmoid<kFast>(x[1] + r[1]);
    const float n = tanh_of<kFast>(x[2] + reset * (r[2] + rbn));
    return (1.0f - z) * n + z * h_prev;
  }
  // LSTM i, o, f, c
  const float i = sigmoid<kFast>(x[0] + r[0]);
  const float o = sigmoid<kFast>(x[1] + r[1]);
  const float f = sigmoid<kFast>(x[2] + r[2]);
  const float g = tanh_of<kFast>(x[3] + r[3]);
  const float c_new = f * *c + i * g;
  *c = c_new;
  return o * tanh_of<kFast>(c_new);
}

// The blocks of a persistent launch that exchange state meet here between steps (all of them are
// resident: the launch is cooperative). `arrived` only grows: the t-th barrier of a group of n
// blocks waits for (t + 1) * n arrivals, so a step needs one atomic and no reset.
__device__ __forceinline__ void group_barrier(unsigned* arrived, unsigned target) {
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();  // this block's writes before its arrival
    atomicAdd(arrived, 1u);
    const volatile unsigned* seen = arrived;
    while (*seen < target) {
    }
    __threadfence();
  }
  __syncthreads();
}

}  // namespace voxrt::backends::cuda::ops
