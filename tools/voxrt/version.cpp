// `voxrt --version`.
#include <string>

#include "backends/device_backend.h"
#include "commands.h"
#include "runtime/device_plugin.h"
#include "runtime/engine_format.h"

#ifndef VOXRT_VERSION_TEXT
#define VOXRT_VERSION_TEXT "unknown"
#endif
#ifndef VOXRT_GIT_COMMIT
#define VOXRT_GIT_COMMIT "unknown"
#endif

namespace voxrt::cli {

std::string version_text() {
  std::string text = std::string("voxrt ") + VOXRT_VERSION_TEXT + " (commit " + VOXRT_GIT_COMMIT +
                     ")\nengine format " + std::to_string(runtime::kEngineFormatVersion) +
                     "\nCUDA backend: ";
  // Opens the plugin (runtime/device_plugin.h) to say whether CUDA engines can run here.
  auto backend = runtime::load_device_backend(DeviceKind::kCuda);
  if (!backend) return text + backend.status().message();
  auto device = (*backend)->fingerprint();
  return text + "loaded" + (device ? ", " + *device : "; " + device.status().message());
}

}  // namespace voxrt::cli
