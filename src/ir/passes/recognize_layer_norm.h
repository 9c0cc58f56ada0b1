// Recognizes the decomposed LayerNorm that PyTorch exports at opsets < 17:
//   m = ReduceMean(x, axes=last k, keepdims=1); d = Sub(x, m); p = Pow(d, 2) or Mul(d, d);
//   v = ReduceMean(p, same axes); s = Sqrt(Add(v, eps)); n = Div(d, s);
//   then optionally Mul(n, gamma) and Add(., beta) with constant gamma/beta
// and replaces it with one LayerNormalization node (axis -k), provided no intermediate value
// has another consumer or is a graph output.
#pragma once

#include <memory>

#include "ir/passes/pass.h"

namespace voxrt::ir {

std::unique_ptr<Pass> make_recognize_layer_norm_pass();

}  // namespace voxrt::ir
