// libvoxrt_cuda.so's entry point: voxrt (runtime/device_plugin.cpp) opens the plugin and calls it
// once; it registers the CUDA backend with the process's registry, which lives in libvoxrt.so.
#include <cstring>

#include "backends/cuda/cuda_backend.h"
#include "runtime/engine_format.h"

// `builder_version`: voxrt's; the plugin registers only when it is its own (0), else returns 1.
extern "C" __attribute__((visibility("default"))) int voxrt_cuda_plugin_register(
    const char* builder_version) {
  if (builder_version == nullptr ||
      std::strcmp(builder_version, voxrt::runtime::kBuilderVersion) != 0)
    return 1;
  voxrt::backends::cuda::register_cuda_backend();
  return 0;
}
