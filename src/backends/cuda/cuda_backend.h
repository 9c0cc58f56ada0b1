// The CUDA backend's entry point (docs/cuda_backend.md). A program that links voxrt_backend_cuda
// calls register_cuda_backend() once at start-up; then `--device cuda` builds and CUDA engines
// load. Nothing registers itself.
#pragma once

#include <string>

#include "backends/device_backend.h"

namespace voxrt::backends::cuda {

// Registers the process-wide CUDA backend with backends::register_device_backend().
void register_cuda_backend();
// The backend object (also usable without registering, e.g. by tests).
DeviceBackend& cuda_backend();
// Whether a CUDA device can be used here; `why` says why not ("no CUDA device: ...").
bool cuda_device_available(std::string* why);

}  // namespace voxrt::backends::cuda
