// Above 48 KiB of dynamic shared memory a kernel must opt in. Each kernel does it once per
// process, on its first launch (an eager one, so never inside a graph capture), through a
// function-local static around this call.
#pragma once

#include <cuda_runtime.h>

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

}  // namespace voxrt::backends::cuda::ops
