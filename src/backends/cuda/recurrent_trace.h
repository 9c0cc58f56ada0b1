// VOXRT_CUDA_RECURRENT_TRACE=1: the persistent recurrent kernels (recurrent_ops.cu,
// recurrent_ksplit.cu) record, per block, clock64 sums of the phases of a step into one device
// buffer, and the process prints the split of the last traced launch's step time at exit. A
// diagnostic: it adds clock reads to thread 0 of each block and one synchronizing copy at exit.
#pragma once

#include <cstdint>

namespace voxrt::backends::cuda::ops {

// Per block: cycles of the kernel's step phases 0 .. kTraceStepPhases - 1 summed over the steps,
// then the whole launch's cycles and its nanoseconds (globaltimer, for the clock rate).
constexpr int kTraceStepPhases = 5;
constexpr int kTracePhases = kTraceStepPhases + 2;

// What a kernel's phases 0 .. kTraceStepPhases - 1 measure (static strings), for the printout.
struct TracePhaseNames {
  const char* kernel;
  const char* phases[kTraceStepPhases];
};

// The trace buffer ([blocks][kTracePhases]) for a launch of `blocks` blocks of `warps` warps and
// `steps` steps, allocated on the first traced launch (an eager one: never inside a graph
// capture); nullptr when tracing is off or the grid is larger than the buffer.
unsigned long long* recurrent_trace_buffer(long long blocks, std::int64_t steps, int warps,
                                           const TracePhaseNames& names);

}  // namespace voxrt::backends::cuda::ops
