#include "runtime/device_plugin.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "runtime/engine_format.h"

namespace voxrt::runtime {
namespace {

namespace fs = std::filesystem;

// Where the plugin may be: $VOXRT_CUDA_PLUGIN (a file), beside libvoxrt.so (the build tree's
// lib/, an installed libdir) or in its voxrt/ subfolder (the Debian package), ../lib beside the
// program (a bundle of bin/ and lib/), then the dynamic loader's own search path.
std::vector<std::string> plugin_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("VOXRT_CUDA_PLUGIN"); env != nullptr && *env != '\0')
    out.emplace_back(env);
  std::vector<fs::path> dirs;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&load_device_backend), &info) != 0 && info.dli_fname) {
    const fs::path library_dir = fs::path(info.dli_fname).parent_path();
    dirs.push_back(library_dir);
    dirs.push_back(library_dir / "voxrt");
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    dirs.push_back(exe.parent_path() / ".." / "lib");
    dirs.push_back(exe.parent_path() / ".." / "lib" / "voxrt");
  }
  for (const fs::path& dir : dirs) {
    const fs::path file = dir / kCudaPluginFile;
    if (fs::exists(file, ec)) out.push_back(fs::weakly_canonical(file, ec).string());
  }
  out.emplace_back(kCudaPluginFile);  // the loader's search path (LD_LIBRARY_PATH, ldconfig)
  return out;
}

struct PluginState {
  std::once_flag once;
  Status status;
};

PluginState& plugin_state() {
  static PluginState state;
  return state;
}

Status open_cuda_plugin() {
  std::string tried;
  std::string open_error;
  for (const std::string& candidate : plugin_candidates()) {
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* error = dlerror();
      const bool not_there =
          candidate == kCudaPluginFile && error != nullptr &&
          std::string(error).find("cannot open shared object file") != std::string::npos &&
          std::string(error).find(kCudaPluginFile) != std::string::npos;
      tried += (tried.empty() ? "" : ", ") + candidate;
      if (!not_there && error != nullptr && open_error.empty()) open_error = error;
      continue;
    }
    using Entry = int (*)(const char*);
    auto entry = reinterpret_cast<Entry>(dlsym(handle, kCudaPluginEntry));
    if (entry == nullptr) {
      return unsupported(candidate, " is not a voxrt CUDA plugin (no ", kCudaPluginEntry, ")");
    }
    // The plugin shares voxrt's C++ types: it must come from the same build.
    if (entry(kBuilderVersion) != 0) {
      return version_mismatch(candidate, " was built for another voxrt (builder version ",
                              kBuilderVersion, " here): install the plugin of this build");
    }
    return Status::ok();
  }
  if (!open_error.empty()) {
    return unsupported("the CUDA backend could not be loaded: ", open_error,
                       " (is the CUDA 13 runtime installed, and its lib folder on the loader "
                       "path?)");
  }
  return unsupported("this voxrt has no CUDA backend: ", kCudaPluginFile,
                     " was not found (looked for: ", tried,
                     "); it is built when nvcc is found, or set VOXRT_CUDA_PLUGIN to its path");
}

}  // namespace

Expected<backends::DeviceBackend*> load_device_backend(DeviceKind kind) {
  if (backends::DeviceBackend* backend = backends::device_backend(kind)) return backend;
  if (kind != DeviceKind::kCuda) return unsupported("no backend for this device kind");
  PluginState& state = plugin_state();
  std::call_once(state.once, [&] { state.status = open_cuda_plugin(); });
  VOXRT_RETURN_IF_ERROR(state.status);
  if (backends::DeviceBackend* backend = backends::device_backend(kind)) return backend;
  // The plugin registers with libvoxrt.so's registry; a program that links voxrt's static
  // libraries has a registry of its own, which the plugin cannot reach.
  return unsupported(
      "the CUDA plugin loaded, but this program links voxrt statically, so it "
      "cannot see the plugin's backend: link libvoxrt.so (voxrt::voxrt), or link "
      "the CUDA backend and call backends::cuda::register_cuda_backend()");
}

}  // namespace voxrt::runtime
