// The device side of VOXRT_CUDA_RECURRENT_TRACE (recurrent_trace.h) for the persistent recurrent
// kernels: thread 0 of each block sums the clock cycles of a step's phases, then writes them with
// the launch's cycles and nanoseconds (globaltimer, for the clock rate) into the block's row.
#pragma once

#include <cuda_runtime.h>

#include "backends/cuda/recurrent_trace.h"

namespace voxrt::backends::cuda::ops {

class PhaseTrace {
 public:
  // out: the launch's trace buffer, null when tracing is off.
  __device__ __forceinline__ explicit PhaseTrace(unsigned long long* out)
      : out_(out), on_(out != nullptr && threadIdx.x == 0) {
    if (on_) {
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start_ns_));
      start_ = mark_ = clock64();
    }
  }

  // Adds the cycles since the previous lap to phase i (< kTraceStepPhases).
  __device__ __forceinline__ void lap(int i) {
    if (on_) {
      const long long now = clock64();
      phase_[i] += static_cast<unsigned long long>(now - mark_);
      mark_ = now;
    }
  }

  // Writes row `block` of the buffer.
  __device__ __forceinline__ void finish(unsigned block) {
    if (!on_) return;
    unsigned long long end_ns = 0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(end_ns));
    phase_[kTraceStepPhases] = static_cast<unsigned long long>(clock64() - start_);
    phase_[kTraceStepPhases + 1] = end_ns - start_ns_;
#pragma unroll
    for (int i = 0; i < kTracePhases; ++i) out_[block * kTracePhases + i] = phase_[i];
  }

 private:
  unsigned long long* out_;
  bool on_;  // thread 0 of a traced launch
  unsigned long long phase_[kTracePhases] = {};
  long long start_ = 0, mark_ = 0;
  unsigned long long start_ns_ = 0;
};

}  // namespace voxrt::backends::cuda::ops
