// Kernels and calls made of functions, for the many ops whose prepared state is a handful of
// numbers captured by a lambda (the typed elementwise, shape, index and scatter ops): the lambda
// passed to make_function_kernel prepares for a set of shapes and returns the launch lambda.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "backends/cuda/cuda_common.h"

namespace voxrt::backends::cuda {

// Enqueues one or more launches on context.stream; returns the first CUDA error.
using Launch = std::function<cudaError_t(
    std::span<const DevTensor> in, std::span<const DevTensor> out, const CudaRunContext& context)>;

class LaunchCall final : public CudaCall {
 public:
  // `what` names the launch in an error ("Where", "ScatterND", ...).
  LaunchCall(std::string what, Launch launch, std::size_t scratch_bytes)
      : what_(std::move(what)), launch_(std::move(launch)), scratch_bytes_(scratch_bytes) {}
  std::size_t scratch_bytes() const override { return scratch_bytes_; }
  Status enqueue(std::span<const DevTensor> in, std::span<const DevTensor> out,
                 const CudaRunContext& context) const override {
    return cuda_status(launch_(in, out, context), what_.c_str());
  }

 private:
  std::string what_;
  Launch launch_;
  std::size_t scratch_bytes_;
};

inline Expected<std::unique_ptr<CudaCall>> launch_call(std::string what, Launch launch,
                                                       std::size_t scratch_bytes = 0) {
  return std::unique_ptr<CudaCall>(
      new LaunchCall(std::move(what), std::move(launch), scratch_bytes));
}

using Prepare = std::function<Expected<std::unique_ptr<CudaCall>>(std::span<const DevTensor> in,
                                                                  std::span<const DevTensor> out)>;

class FunctionKernel final : public CudaKernel {
 public:
  explicit FunctionKernel(Prepare prepare) : prepare_(std::move(prepare)) {}
  Expected<std::unique_ptr<CudaCall>> prepare(std::span<const DevTensor> in,
                                              std::span<const DevTensor> out,
                                              cublasLtHandle_t) const override {
    return prepare_(in, out);
  }

 private:
  Prepare prepare_;
};

inline Expected<std::unique_ptr<CudaKernel>> make_function_kernel(Prepare prepare) {
  return std::unique_ptr<CudaKernel>(new FunctionKernel(std::move(prepare)));
}

}  // namespace voxrt::backends::cuda
