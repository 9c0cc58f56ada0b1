// cuDNN, loaded at run time (dlopen of libcudnn.so.9) instead of linked: a machine without cuDNN
// still loads voxrt and runs every other CUDA kernel; only the cuDNN tactics then report that
// they cannot run, and the autotuner picks another. Built only when cudnn.h was found
// (VOXRT_HAVE_CUDNN); without it cudnn_api() says so.
#pragma once

#include <string>

#include "backends/cuda/cuda_ops.h"
#include "voxrt/status.h"

#if VOXRT_HAVE_CUDNN
#include <cudnn.h>
#endif

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN
// The entry points the backend uses (the legacy convolution API; the same in every cuDNN 9).
struct CudnnApi {
  decltype(&cudnnGetVersion) get_version;
  decltype(&cudnnGetErrorString) get_error_string;
  decltype(&cudnnCreate) create;
  decltype(&cudnnDestroy) destroy;
  decltype(&cudnnSetStream) set_stream;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnSetTensor4dDescriptor) set_tensor_4d;
  decltype(&cudnnDestroyTensorDescriptor) destroy_tensor;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnSetFilter4dDescriptor) set_filter_4d;
  decltype(&cudnnDestroyFilterDescriptor) destroy_filter;
  decltype(&cudnnCreateConvolutionDescriptor) create_convolution;
  decltype(&cudnnSetConvolution2dDescriptor) set_convolution_2d;
  decltype(&cudnnSetConvolutionMathType) set_math_type;
  decltype(&cudnnSetConvolutionGroupCount) set_group_count;
  decltype(&cudnnDestroyConvolutionDescriptor) destroy_convolution;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) get_forward_algorithm_v7;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) get_forward_workspace_size;
  decltype(&cudnnConvolutionForward) convolution_forward;
};

// The RNN entry points (cuDNN's adv sub-library behind the same soname), bound apart from the
// convolution ones so that a library without them still runs the convolution tactics.
struct CudnnRnnApi {
  decltype(&cudnnCreateRNNDescriptor) create_rnn;
  decltype(&cudnnDestroyRNNDescriptor) destroy_rnn;
  decltype(&cudnnSetRNNDescriptor_v8) set_rnn;
  decltype(&cudnnCreateRNNDataDescriptor) create_rnn_data;
  decltype(&cudnnDestroyRNNDataDescriptor) destroy_rnn_data;
  decltype(&cudnnSetRNNDataDescriptor) set_rnn_data;
  decltype(&cudnnGetRNNWeightSpaceSize) get_weight_space_size;
  decltype(&cudnnGetRNNWeightParams) get_weight_params;
  decltype(&cudnnGetRNNTempSpaceSizes) get_temp_space_sizes;
  decltype(&cudnnRNNForward) forward;
  decltype(&cudnnSetTensorNdDescriptor) set_tensor_nd;
  decltype(&cudnnGetTensorNdDescriptor) get_tensor_nd;
  decltype(&cudnnCreateDropoutDescriptor) create_dropout;
  decltype(&cudnnSetDropoutDescriptor) set_dropout;
  decltype(&cudnnDestroyDropoutDescriptor) destroy_dropout;
};

// The graph (backend) API: the engine configurations cuDNN's heuristics rank for an operation
// graph, many more kernels than the legacy convolution algorithms reach (cudnn_graph_conv.h).
struct CudnnGraphApi {
  decltype(&cudnnBackendCreateDescriptor) create_descriptor;
  decltype(&cudnnBackendDestroyDescriptor) destroy_descriptor;
  decltype(&cudnnBackendSetAttribute) set_attribute;
  decltype(&cudnnBackendGetAttribute) get_attribute;
  decltype(&cudnnBackendFinalize) finalize;
  decltype(&cudnnBackendExecute) execute;
};

// Status from a cuDNN call (`what`: the call, for the message).
Status cudnn_status(const CudnnApi& api, cudnnStatus_t status, const char* what);
// cuDNN's data type for the operand type of a call (float, half, bfloat16).
inline cudnnDataType_t cudnn_data_type(ops::LowType type) {
  switch (type) {
    case ops::LowType::kF16: return CUDNN_DATA_HALF;
    case ops::LowType::kBF16: return CUDNN_DATA_BFLOAT16;
    case ops::LowType::kF32: break;
  }
  return CUDNN_DATA_FLOAT;
}
#else
struct CudnnApi;
struct CudnnRnnApi;
struct CudnnGraphApi;
#endif

// The loaded API (once per process), or an unsupported status saying why not (library not
// found, a symbol missing, built without cudnn.h).
Expected<const CudnnApi*> cudnn_api();
// The RNN entry points, or why not (cudnn_api() failed, or the library lacks one of them).
Expected<const CudnnRnnApi*> cudnn_rnn_api();
// The graph API entry points, or why not.
Expected<const CudnnGraphApi*> cudnn_graph_api();
// "cudnn=<version>" for the engine fingerprint, or "cudnn=none".
std::string cudnn_fingerprint();

}  // namespace voxrt::backends::cuda
