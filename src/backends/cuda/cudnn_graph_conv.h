// A convolution planned through cuDNN's graph (backend) API. The legacy cudnnConvolutionForward
// algorithms reach only a few of cuDNN's kernels: for DS2's conv.3 at batch 256 (FP16, NHWC)
// their best was a 256x64-tile CUTLASS kernel, while PyTorch, which plans through this API, runs
// a 128x32-tile implicit GEMM in half the time (docs/perf/gpu.md). Here the engine
// configurations cuDNN's heuristic ranks (CUDNN_HEUR_MODE_A) become tactics: `rank` k is the
// k-th configuration that makes a plan. An engine file stores only k; loading re-runs the same
// heuristic, which the engine fingerprint (same cuDNN, same device) makes give the same list.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/cudnn_conv.h"

namespace voxrt::backends::cuda {

#if VOXRT_HAVE_CUDNN

class CudnnGraphConv {
 public:
  virtual ~CudnnGraphConv() = default;
  virtual std::size_t workspace_bytes() const = 0;
  // "engine <global index>" of the chosen configuration, for messages.
  virtual const std::string& engine_name() const = 0;
  // y = conv(x, w) on the handle's stream: x, w and y in shape.data_type (NHWC / KRSC when
  // shape.nhwc), all aligned to 16 bytes.
  virtual Status execute(cudnnHandle_t handle, const void* x, const void* w, void* y,
                         void* workspace) const = 0;
};

// Unsupported status when the graph API is missing, the heuristic ranks fewer than rank + 1
// usable configurations, or the best usable one wants more than max_workspace_bytes.
// Configurations that compile their kernel at run time are passed over (they would add seconds
// to every engine load), and so are FFT, Winograd and tensor-core (TF32) ones for strict FP32.
Expected<std::unique_ptr<CudnnGraphConv>> make_cudnn_graph_conv(cudnnHandle_t handle,
                                                                const CudnnConvShape& shape,
                                                                int rank,
                                                                std::size_t max_workspace_bytes);

#endif

}  // namespace voxrt::backends::cuda
