// The recurrent phase trace's buffer and its printout at exit (recurrent_trace.h).
#include "backends/cuda/recurrent_trace.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace voxrt::backends::cuda::ops {
namespace {

constexpr long long kTraceMaxBlocks = 4096;

struct RecurrentTrace {
  unsigned long long* device = nullptr;
  long long blocks = 0;  // of the last traced launch
  std::int64_t steps = 0;
  int warps = 0;
  const TracePhaseNames* names = nullptr;
};

RecurrentTrace& recurrent_trace() {
  static RecurrentTrace trace;
  return trace;
}

void print_recurrent_trace() {
  const RecurrentTrace& trace = recurrent_trace();
  if (!trace.device || trace.blocks == 0 || trace.steps == 0 || !trace.names) return;
  std::vector<unsigned long long> v(static_cast<std::size_t>(trace.blocks) * kTracePhases);
  if (cudaMemcpy(v.data(), trace.device, v.size() * sizeof(v[0]), cudaMemcpyDeviceToHost) !=
      cudaSuccess)
    return;
  const int whole = kTraceStepPhases, nanoseconds = kTraceStepPhases + 1;
  const double cycles_per_ns =
      v[nanoseconds] > 0 ? static_cast<double>(v[whole]) / static_cast<double>(v[nanoseconds])
                         : 1.0;
  std::fprintf(stderr,
               "recurrent trace: last persistent launch (%s), %lld blocks of %d warps, %lld "
               "steps, %.2f GHz; ns per step, mean / max over blocks:\n",
               trace.names->kernel, trace.blocks, trace.warps, static_cast<long long>(trace.steps),
               cycles_per_ns);
  for (int i = 0; i <= whole; ++i) {
    double sum = 0.0, max = 0.0;
    for (long long b = 0; b < trace.blocks; ++b) {
      const double ns = static_cast<double>(v[static_cast<std::size_t>(b) * kTracePhases + i]) /
                        cycles_per_ns / static_cast<double>(trace.steps);
      sum += ns;
      max = std::max(max, ns);
    }
    std::fprintf(stderr, "  %-34s %8.1f %8.1f\n",
                 i == whole ? "whole step" : trace.names->phases[i],
                 sum / static_cast<double>(trace.blocks), max);
  }
}

}  // namespace

unsigned long long* recurrent_trace_buffer(long long blocks, std::int64_t steps, int warps,
                                           const TracePhaseNames& names) {
  const char* env = std::getenv("VOXRT_CUDA_RECURRENT_TRACE");
  if (!env || std::atoi(env) != 1 || blocks > kTraceMaxBlocks) return nullptr;
  RecurrentTrace& trace = recurrent_trace();
  if (!trace.device) {
    if (cudaMalloc(&trace.device, kTraceMaxBlocks * kTracePhases * sizeof(unsigned long long)) !=
        cudaSuccess) {
      trace.device = nullptr;
      return nullptr;
    }
    std::atexit(print_recurrent_trace);
  }
  trace.blocks = blocks;
  trace.steps = steps;
  trace.warps = warps;
  trace.names = &names;
  return trace.device;
}

}  // namespace voxrt::backends::cuda::ops
