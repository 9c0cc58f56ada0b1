// Fuses an activation (and, for Conv, an Add of a per-channel constant bias) into the dense op
// that feeds it:
//   Conv / FusedConv [+ Add(per-channel constant)] [+ act]  -> FusedConv(X, W, B', act)
//   MatMul / FusedMatMul / Gemm + act                        -> FusedMatMul(..., act)
// act: Relu, Clip with constant bounds (PyTorch's Hardtanh), Max / Min with a scalar constant (a
// one-sided clip), LeakyRelu, Sigmoid, Tanh, the erf form of GELU, x * 0.5 * (1 + Erf(x /
// sqrt(2))) in any multiplication order, with Div by sqrt(2) or Mul by 1/sqrt(2), and (when the
// options allow it) SiLU, x * Sigmoid(x).
// After an activation, Max / Min with a scalar constant and Clip with constant bounds become a
// clamp applied after it (activation_clamp_min / _max): openWakeWord's LeakyRelu then
// Max(x, -0.4) after each convolution. Intermediates must have no other consumer and not be
// graph outputs.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

struct DenseActivationOptions {
  // "silu": only targets whose dense kernels take it (the CPU backend).
  bool silu = true;
};

std::unique_ptr<Pass> make_fuse_dense_activation_pass(DenseActivationOptions options = {});

}  // namespace voxrt::ir
