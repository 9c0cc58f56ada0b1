// Device backends as plugins. The CUDA backend is a library of its own, libvoxrt_cuda.so, opened
// with dlopen the first time something needs it (a CUDA engine is loaded, `--device cuda` is
// built, a server is given GPUs), so voxrt itself needs no CUDA library: it starts on a machine
// without the CUDA runtime, and `voxrt --help` does not map cuBLASLt. A program that links the
// CUDA backend statically and registers it (the gpu tests) never opens the plugin.
#pragma once

#include <string>

#include "backends/device_backend.h"

namespace voxrt::runtime {

// The registered backend for `kind`; if none and `kind` is CUDA, the plugin is searched for,
// opened and registered (once per process). The error says why there is none: no plugin where
// voxrt looks (the places are listed), a plugin that cannot be opened (e.g. the CUDA runtime is
// not installed), or one of another build.
Expected<backends::DeviceBackend*> load_device_backend(DeviceKind kind);

// The plugin's entry point and the version of the interface between voxrt and the plugin (the
// C++ types it shares: a plugin of another build is refused).
inline constexpr const char* kCudaPluginFile = "libvoxrt_cuda.so";
inline constexpr const char* kCudaPluginEntry = "voxrt_cuda_plugin_register";

}  // namespace voxrt::runtime
