// GRU / LSTM through cuDNN's RNN (cudnnRNNForward, one layer per ONNX node): per step a GEMM
// with 16-bit output and cuDNN's fused cell kernel, or a persistent kernel that keeps the
// recurrent weights on chip (CUDNN_RNN_ALGO_PERSIST_STATIC). The autotuner weighs them against
// voxrt's own recurrent tactics (recurrent.cpp).
#pragma once

#include <memory>
#include <span>

#include "backends/cpu/recurrent/recurrent_spec.h"
#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

// Whether cuDNN's RNN computes this node (on top of recurrent_unsupported() being empty):
// forward or bidirectional (cuDNN has no reverse-only direction).
bool cudnn_rnn_takes(const ir::Node& node);

// For tactics kRecurrentCudnnStandard, kRecurrentCudnnPersistStatic and
// kRecurrentCudnnPersistStaticF32 (float data at any precision). The weights are packed
// into cuDNN's weight space here, once. A descriptor cuDNN refuses is not an error here: the
// kernel's prepare() reports it (unsupported), so the autotuner passes the tactic over.
Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_kernel(
    const ir::Node& node, const cpu::recurrent::RecurrentSpec& spec, TacticId tactic,
    KernelBuildContext& build);

// A stack of forward GRU nodes, each reading the one below (bottom first; every node one the
// CUDA backend runs, recurrent_unsupported() empty), with one hidden size: the nodes cuDNN can
// run as one multi-layer cudnnRNNForward.
bool cudnn_rnn_stackable(std::span<const ir::Node* const> layers);

// One kernel for such a stack (CUDNN_RNN_ALGO_STANDARD, the build's precision): cuDNN
// overlaps the layers' steps, where one call per node runs them layer after layer. Its
// inputs: layer 0's X, then each layer's initial_h (absent: zeros); its outputs: the top
// layer's Y, then each layer's Y_h (absent: not written).
Expected<std::unique_ptr<CudaKernel>> make_cudnn_rnn_stack_kernel(
    std::span<const ir::Node* const> layers, KernelBuildContext& build);

}  // namespace voxrt::backends::cuda
