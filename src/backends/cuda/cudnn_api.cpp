#include "backends/cuda/cudnn_api.h"

#if VOXRT_HAVE_CUDNN
#include <dlfcn.h>

#include <type_traits>
#endif

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN

namespace {

struct Loaded {
  CudnnApi api{};
  std::string error;  // empty when api is complete
};

Loaded load() {
  Loaded loaded;
  // The soname first (what the toolkit and the pip wheels ship), then the development link.
  void* library = nullptr;
  std::string tried;
  for (const char* name : {"libcudnn.so.9", "libcudnn.so"}) {
    library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (library) break;
    const char* why = dlerror();
    tried += str_cat(tried.empty() ? "" : "; ", name, ": ", why ? why : "not found");
  }
  if (!library) {
    loaded.error = str_cat("cuDNN is not available (", tried,
                           "); put its directory on LD_LIBRARY_PATH to use the cuDNN tactics");
    return loaded;
  }
  auto bind = [&](auto& slot, const char* symbol) {
    if (!loaded.error.empty()) return;
    void* address = dlsym(library, symbol);
    if (!address) {
      loaded.error = str_cat("cuDNN library has no ", symbol);
      return;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  CudnnApi& a = loaded.api;
  bind(a.get_version, "cudnnGetVersion");
  bind(a.get_error_string, "cudnnGetErrorString");
  bind(a.create, "cudnnCreate");
  bind(a.destroy, "cudnnDestroy");
  bind(a.set_stream, "cudnnSetStream");
  bind(a.create_tensor, "cudnnCreateTensorDescriptor");
  bind(a.set_tensor_4d, "cudnnSetTensor4dDescriptor");
  bind(a.destroy_tensor, "cudnnDestroyTensorDescriptor");
  bind(a.create_filter, "cudnnCreateFilterDescriptor");
  bind(a.set_filter_4d, "cudnnSetFilter4dDescriptor");
  bind(a.destroy_filter, "cudnnDestroyFilterDescriptor");
  bind(a.create_convolution, "cudnnCreateConvolutionDescriptor");
  bind(a.set_convolution_2d, "cudnnSetConvolution2dDescriptor");
  bind(a.set_math_type, "cudnnSetConvolutionMathType");
  bind(a.destroy_convolution, "cudnnDestroyConvolutionDescriptor");
  bind(a.get_forward_algorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
  bind(a.get_forward_workspace_size, "cudnnGetConvolutionForwardWorkspaceSize");
  bind(a.convolution_forward, "cudnnConvolutionForward");
  if (loaded.error.empty() && a.get_version() / 10000 != CUDNN_MAJOR) {
    loaded.error = str_cat("cuDNN ", a.get_version(), " is loaded; voxrt was built for cuDNN ",
                           CUDNN_MAJOR, ".x");
  }
  return loaded;
}

const Loaded& loaded() {
  static const Loaded instance = load();
  return instance;
}

}  // namespace

Status cudnn_status(const CudnnApi& api, cudnnStatus_t status, const char* what) {
  if (status == CUDNN_STATUS_SUCCESS) return Status::ok();
  const std::string message = str_cat("cuDNN ", what, ": ", api.get_error_string(status));
  // Shapes or types an algorithm does not take are "cannot run", not a failure of the backend.
  if (status == CUDNN_STATUS_NOT_SUPPORTED || status == CUDNN_STATUS_BAD_PARAM)
    return unsupported(message);
  return internal_error(message);
}

Expected<const CudnnApi*> cudnn_api() {
  const Loaded& l = loaded();
  if (!l.error.empty()) return unsupported(l.error);
  return &l.api;
}

std::string cudnn_fingerprint() {
  const Loaded& l = loaded();
  return l.error.empty() ? str_cat("cudnn=", l.api.get_version()) : std::string("cudnn=none");
}

#else

Expected<const CudnnApi*> cudnn_api() {
  return unsupported("this build has no cuDNN support (cudnn.h was not found at configure time)");
}

std::string cudnn_fingerprint() {
  return "cudnn=none";
}

#endif

}  // namespace voxrt::backends::cuda
