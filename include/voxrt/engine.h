// Run time (STYLE.md 1, 9): an Engine is immutable once loaded and shared by threads; all
// mutable state lives in ExecutionContexts (one per caller) and in the state slot pool.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "voxrt/status.h"
#include "voxrt/tensor.h"

namespace voxrt {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  // -1 for a dimension that varies at run time.
  std::vector<std::int64_t> dims;
  std::vector<std::string> dim_names;
};

// A tensor in device memory (CUDA engines' enqueue): the caller allocates, owns and keeps it
// alive until the run that uses it has finished on its stream.
struct DeviceTensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  Dims dims;
};

class ExecutionContext;
class EngineImpl;

class Engine {
 public:
  static Expected<std::shared_ptr<const Engine>> load_file(const std::string& path);
  static Expected<std::shared_ptr<const Engine>> load_bytes(std::string bytes);
  ~Engine();

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  const std::map<std::string, std::string>& metadata() const;
  // Per-caller scratch; threads = kernel threads for this context.
  Expected<std::unique_ptr<ExecutionContext>> create_context(int threads = 1) const;
  const EngineImpl& impl() const { return *impl_; }
  // For the loader and tests; users call load_file / load_bytes.
  static std::shared_ptr<const Engine> create(std::unique_ptr<EngineImpl> impl);

 private:
  explicit Engine(std::unique_ptr<EngineImpl> impl);
  std::unique_ptr<EngineImpl> impl_;
};

class ExecutionContextImpl;

class ExecutionContext {
 public:
  ~ExecutionContext();
  // Inputs in the engine's input order; returns outputs in its output order.
  Expected<std::vector<Tensor>> run(std::span<const Tensor> inputs);
  // CUDA engines (TensorRT's enqueue): enqueues one run on the caller's stream `cuda_stream` (a
  // cudaStream_t) and returns without waiting. Inputs are read from and outputs written to
  // device memory the caller owns, in the engine's input / output order; each output must have
  // the dims output_dims gives for these inputs. The caller synchronizes its stream (or waits
  // on an event) before it reads the outputs or reuses the inputs. Runs of one context are
  // ordered among themselves whatever streams they use. A CPU engine returns an error. Not for
  // a stream being captured into the caller's own CUDA graph.
  Status enqueue(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                 void* cuda_stream);
  // CUDA engines: the dims of every output for inputs of these dtypes and dims (data unused),
  // planned without running.
  Expected<std::vector<Dims>> output_dims(std::span<const DeviceTensor> inputs);
  ExecutionContextImpl& impl() { return *impl_; }

 private:
  friend class Engine;
  explicit ExecutionContext(std::unique_ptr<ExecutionContextImpl> impl);
  std::unique_ptr<ExecutionContextImpl> impl_;
};

}  // namespace voxrt
