#include "backends/cuda/nvrtc_compile.h"

#include <dlfcn.h>
#include <nvrtc.h>

#include <type_traits>

namespace voxrt::backends::cuda {
namespace {

struct NvrtcApi {
  decltype(&nvrtcVersion) version = nullptr;
  decltype(&nvrtcGetErrorString) error_string = nullptr;
  decltype(&nvrtcCreateProgram) create_program = nullptr;
  decltype(&nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&nvrtcCompileProgram) compile_program = nullptr;
  decltype(&nvrtcGetProgramLogSize) log_size = nullptr;
  decltype(&nvrtcGetProgramLog) log = nullptr;
  decltype(&nvrtcGetCUBINSize) cubin_size = nullptr;
  decltype(&nvrtcGetCUBIN) cubin = nullptr;
};

struct Loaded {
  NvrtcApi api;
  std::string error;  // empty when every entry point is bound
};

Loaded load() {
  Loaded loaded;
  void* library = nullptr;
  std::string tried;
  for (const char* name : {"libnvrtc.so.13", "libnvrtc.so"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library) break;
    const char* why = dlerror();
    tried += str_cat(tried.empty() ? "" : "; ", name, ": ", why ? why : "not found");
  }
  if (!library) {
    loaded.error = str_cat("NVRTC is not available (", tried,
                           "); put the CUDA toolkit's lib directory on LD_LIBRARY_PATH to build "
                           "engines with fused pointwise kernels");
    return loaded;
  }
  const auto bind = [&](auto& slot, const char* symbol) {
    if (!loaded.error.empty()) return;
    void* address = dlsym(library, symbol);
    if (!address) {
      loaded.error = str_cat("the NVRTC library has no ", symbol);
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  NvrtcApi& a = loaded.api;
  bind(a.version, "nvrtcVersion");
  bind(a.error_string, "nvrtcGetErrorString");
  bind(a.create_program, "nvrtcCreateProgram");
  bind(a.destroy_program, "nvrtcDestroyProgram");
  bind(a.compile_program, "nvrtcCompileProgram");
  bind(a.log_size, "nvrtcGetProgramLogSize");
  bind(a.log, "nvrtcGetProgramLog");
  bind(a.cubin_size, "nvrtcGetCUBINSize");
  bind(a.cubin, "nvrtcGetCUBIN");
  return loaded;
}

const Loaded& loaded() {
  static const Loaded l = load();  // thread-safe once
  return l;
}

}  // namespace

Expected<std::string> nvrtc_compile_cubin(const std::string& source,
                                          const std::string& program_name, int sm) {
  const Loaded& l = loaded();
  if (!l.error.empty()) return unsupported(l.error);
  const NvrtcApi& api = l.api;
  const auto failed = [&](const char* what, nvrtcResult result) {
    return internal_error("NVRTC ", what, " failed for '", program_name,
                          "': ", api.error_string(result));
  };
  nvrtcProgram program = nullptr;
  nvrtcResult result =
      api.create_program(&program, source.c_str(), program_name.c_str(), 0, nullptr, nullptr);
  if (result != NVRTC_SUCCESS) return failed("nvrtcCreateProgram", result);
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram* program;
    ~Destroy() { api.destroy_program(program); }
  } destroy{api, &program};

  // A real architecture (sm_, not compute_) makes NVRTC emit SASS, so loading needs no JIT.
  const std::string arch = str_cat("--gpu-architecture=sm_", sm);
  const char* options[] = {arch.c_str(), "--std=c++17"};
  result = api.compile_program(program, 2, options);
  std::size_t log_bytes = 0;
  std::string log;
  if (api.log_size(program, &log_bytes) == NVRTC_SUCCESS && log_bytes > 1) {
    log.resize(log_bytes);
    if (api.log(program, log.data()) != NVRTC_SUCCESS) log.clear();
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  }
  if (result != NVRTC_SUCCESS) {
    return invalid_argument("NVRTC could not compile '", program_name, "' for sm_", sm, ": ",
                            api.error_string(result), log.empty() ? "" : "\n", log);
  }
  std::size_t bytes = 0;
  result = api.cubin_size(program, &bytes);
  if (result != NVRTC_SUCCESS) return failed("nvrtcGetCUBINSize", result);
  if (bytes == 0) return internal_error("NVRTC made an empty CUBIN for '", program_name, "'");
  std::string cubin(bytes, '\0');
  result = api.cubin(program, cubin.data());
  if (result != NVRTC_SUCCESS) return failed("nvrtcGetCUBIN", result);
  return cubin;
}

std::string nvrtc_fingerprint() {
  const Loaded& l = loaded();
  int major = 0, minor = 0;
  if (!l.error.empty() || l.api.version(&major, &minor) != NVRTC_SUCCESS) return "nvrtc=none";
  return str_cat("nvrtc=", major, ".", minor);
}

}  // namespace voxrt::backends::cuda
