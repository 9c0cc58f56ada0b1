// Internal to the CPU elementwise family: kernel factories per op group. Each factory picks the
// typed loop for the node's dtypes once, at creation, so run() does no dispatch per element.
#pragma once

#include <functional>
#include <memory>

#include "backends/cpu/elementwise/broadcast.h"
#include "backends/kernel.h"
#include "ir/graph.h"

namespace voxrt::backends::cpu::elementwise {

using KernelFn = std::function<Status(std::span<const Tensor* const> inputs,
                                      std::span<Tensor* const> outputs, KernelContext& context)>;

// A kernel whose whole behaviour was chosen at creation.
class FunctionKernel final : public Kernel {
 public:
  explicit FunctionKernel(KernelFn fn) : fn_(std::move(fn)) {}
  Status run(std::span<const Tensor* const> inputs, std::span<Tensor* const> outputs,
             KernelContext& context) const override {
    return fn_(inputs, outputs, context);
  }

 private:
  KernelFn fn_;
};

// `fast` = the vectorized tactic; otherwise the reference. Errors say why a node is unsupported.
Expected<KernelFn> make_unary_fn(const ir::Node& node, bool fast);   // unary ops, Clip, Not, copies
Expected<KernelFn> make_cast_fn(const ir::Node& node, bool fast);    // Cast
Expected<KernelFn> make_binary_fn(const ir::Node& node, bool fast);  // binary, variadic, Where
Expected<KernelFn> make_fused_pointwise_fn(const ir::Node& node, bool fast);

// The dtype of input i, or an error naming the node when it is missing.
Expected<DType> input_dtype(const ir::Node& node, std::size_t i);

}  // namespace voxrt::backends::cpu::elementwise
