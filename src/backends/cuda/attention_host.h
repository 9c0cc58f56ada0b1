// The host side of the CUDA Attention kernels that tests use without a device: the launch
// shape of one run, read from the operands' dims (attention.cpp).
#pragma once

#include <span>
#include <string>

#include "backends/cuda/attention_launch.h"
#include "backends/cuda/cuda_common.h"
#include "ir/attention_params.h"

namespace voxrt::backends::cuda {

// Sizes, the strides of Q, K, V and the output in `params.layout`, and the broadcast strides of
// the mask (input 3) and bias (input 4) when the node has them; errors name `where`.
Expected<AttentionShape> attention_shape(const std::string& where,
                                         const ir::AttentionParams& params,
                                         std::span<const DevTensor> in, bool has_mask,
                                         bool has_bias);

}  // namespace voxrt::backends::cuda
