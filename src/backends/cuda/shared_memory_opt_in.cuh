// Above 48 KiB of dynamic shared memory a kernel must opt in. Each kernel does it once per
// process, on its first launch (an eager one, so never inside a graph capture), through a
// function-local static around this call. Also: how many blocks of a kernel with that much
// shared memory fit on the device at once (the cooperative persistent launches need all).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace voxrt::backends::cuda::ops {

// Lets `kernel` use as much dynamic shared memory per block as the current device allows.
inline cudaError_t allow_max_dynamic_shared_memory(const void* kernel) {
  int device = 0, optin = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess)
    err = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err == cudaSuccess)
    err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin);
  return err;
}

// Blocks of `kernel` (`threads` each) with `shared` bytes that fit on the device at once (0 when
// it cannot take that much shared memory per block).
inline cudaError_t resident_blocks(const void* kernel, int threads, std::size_t shared,
                                   long long* out) {
  int device = 0, sms = 0, per_sm = 0, optin = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e == cudaSuccess)
    e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (e != cudaSuccess) return e;
  *out = 0;
  if (shared > static_cast<std::size_t>(optin)) return cudaSuccess;
  e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, shared);
  if (e != cudaSuccess) return e;
  *out = static_cast<long long>(sms) * per_sm;
  return cudaSuccess;
}

}  // namespace voxrt::backends::cuda::ops
