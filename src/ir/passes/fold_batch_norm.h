// Folds an inference BatchNormalization into the Conv / FusedConv (over output channels) or
// Gemm / MatMul / FusedMatMul (over the last dim, rank-2 outputs) that feeds it, when the dense
// op has constant weights, no activation, and the BN is its only consumer:
//   W' = W * s,  b' = (b - mean) * s + B,  s = scale / sqrt(var + epsilon).
// A BN that cannot be folded stays as it is.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_fold_batch_norm_pass();

}  // namespace voxrt::ir
