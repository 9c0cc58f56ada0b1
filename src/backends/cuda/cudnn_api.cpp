#include "backends/cuda/cudnn_api.h"

#if VOXRT_HAVE_CUDNN
#include <dlfcn.h>
#endif

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN

namespace {

struct Loaded {
  CudnnApi api{};
  std::string error;  // empty when api is complete
  CudnnRnnApi rnn{};
  std::string rnn_error;  // empty when rnn is complete (and api is)
  CudnnGraphApi graph{};
  std::string graph_error;  // empty when graph is complete (and api is)
};

// Binds `symbol` of `library` into `slot`, or leaves `error` saying which one is missing.
template <typename Slot>
void bind_symbol(void* library, Slot& slot, const char* symbol, std::string& error) {
  if (!error.empty()) return;
  void* address = dlsym(library, symbol);
  if (!address) {
    error = str_cat("cuDNN library has no ", symbol);
    return;
  }
  slot = reinterpret_cast<Slot>(address);
}

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
    bind_symbol(library, slot, symbol, loaded.error);
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
  bind(a.set_group_count, "cudnnSetConvolutionGroupCount");
  bind(a.destroy_convolution, "cudnnDestroyConvolutionDescriptor");
  bind(a.get_forward_algorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
  bind(a.get_forward_workspace_size, "cudnnGetConvolutionForwardWorkspaceSize");
  bind(a.convolution_forward, "cudnnConvolutionForward");
  if (loaded.error.empty() && a.get_version() / 10000 != CUDNN_MAJOR) {
    loaded.error = str_cat("cuDNN ", a.get_version(), " is loaded; voxrt was built for cuDNN ",
                           CUDNN_MAJOR, ".x");
  }
  if (!loaded.error.empty()) {
    loaded.rnn_error = loaded.error;
    loaded.graph_error = loaded.error;
    return loaded;
  }
  auto bind_graph = [&](auto& slot, const char* symbol) {
    bind_symbol(library, slot, symbol, loaded.graph_error);
  };
  CudnnGraphApi& g = loaded.graph;
  bind_graph(g.create_descriptor, "cudnnBackendCreateDescriptor");
  bind_graph(g.destroy_descriptor, "cudnnBackendDestroyDescriptor");
  bind_graph(g.set_attribute, "cudnnBackendSetAttribute");
  bind_graph(g.get_attribute, "cudnnBackendGetAttribute");
  bind_graph(g.finalize, "cudnnBackendFinalize");
  bind_graph(g.execute, "cudnnBackendExecute");
  auto bind_rnn = [&](auto& slot, const char* symbol) {
    bind_symbol(library, slot, symbol, loaded.rnn_error);
  };
  CudnnRnnApi& r = loaded.rnn;
  bind_rnn(r.create_rnn, "cudnnCreateRNNDescriptor");
  bind_rnn(r.destroy_rnn, "cudnnDestroyRNNDescriptor");
  bind_rnn(r.set_rnn, "cudnnSetRNNDescriptor_v8");
  bind_rnn(r.create_rnn_data, "cudnnCreateRNNDataDescriptor");
  bind_rnn(r.destroy_rnn_data, "cudnnDestroyRNNDataDescriptor");
  bind_rnn(r.set_rnn_data, "cudnnSetRNNDataDescriptor");
  bind_rnn(r.get_weight_space_size, "cudnnGetRNNWeightSpaceSize");
  bind_rnn(r.get_weight_params, "cudnnGetRNNWeightParams");
  bind_rnn(r.get_temp_space_sizes, "cudnnGetRNNTempSpaceSizes");
  bind_rnn(r.forward, "cudnnRNNForward");
  bind_rnn(r.set_tensor_nd, "cudnnSetTensorNdDescriptor");
  bind_rnn(r.get_tensor_nd, "cudnnGetTensorNdDescriptor");
  bind_rnn(r.create_dropout, "cudnnCreateDropoutDescriptor");
  bind_rnn(r.set_dropout, "cudnnSetDropoutDescriptor");
  bind_rnn(r.destroy_dropout, "cudnnDestroyDropoutDescriptor");
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

Expected<const CudnnRnnApi*> cudnn_rnn_api() {
  const Loaded& l = loaded();
  if (!l.rnn_error.empty()) return unsupported(l.rnn_error);
  return &l.rnn;
}

Expected<const CudnnGraphApi*> cudnn_graph_api() {
  const Loaded& l = loaded();
  if (!l.graph_error.empty()) return unsupported(l.graph_error);
  return &l.graph;
}

std::string cudnn_fingerprint() {
  const Loaded& l = loaded();
  return l.error.empty() ? str_cat("cudnn=", l.api.get_version()) : std::string("cudnn=none");
}

#else

Expected<const CudnnApi*> cudnn_api() {
  return unsupported("this build has no cuDNN support (cudnn.h was not found at configure time)");
}

Expected<const CudnnRnnApi*> cudnn_rnn_api() {
  return unsupported("this build has no cuDNN support (cudnn.h was not found at configure time)");
}

Expected<const CudnnGraphApi*> cudnn_graph_api() {
  return unsupported("this build has no cuDNN support (cudnn.h was not found at configure time)");
}

std::string cudnn_fingerprint() {
  return "cudnn=none";
}

#endif

}  // namespace voxrt::backends::cuda
