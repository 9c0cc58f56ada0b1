// What an Engine holds once loaded: the deserialized contents, the compiled plan and the I/O
// description. Immutable after load.
#pragma once

#include <memory>

#include "backends/device_backend.h"
#include "core/thread_pool.h"
#include "runtime/engine_format.h"
#include "runtime/plan.h"
#include "voxrt/engine.h"

namespace voxrt {

class EngineImpl {
 public:
  runtime::EngineContents contents;
  std::unique_ptr<runtime::Plan> plan;  // CPU engines
  // Device (CUDA) engines: the whole graph on the device; plan is null.
  std::unique_ptr<backends::DeviceExecutable> device_executable;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::shared_ptr<void> image_keepalive;
  std::size_t file_bytes = 0;

  // Index of the first profile whose ranges contain these input dims, or an error naming the
  // input and the ranges. Inputs no profile mentions are not checked here.
  Expected<int> select_profile(std::span<const Tensor> inputs) const;
};

class ExecutionContextImpl {
 public:
  ExecutionContextImpl(const EngineImpl& engine, int threads) : engine_(engine), pool_(threads) {
    context_.pool = &pool_;
  }
  Expected<std::vector<Tensor>> run(std::span<const Tensor> inputs,
                                    const runtime::StepObserver* observer = nullptr);
  const EngineImpl& engine() const { return engine_; }

 private:
  const EngineImpl& engine_;
  ThreadPool pool_;
  backends::KernelContext context_;
  std::unique_ptr<backends::DeviceSession> device_session_;  // made at the first run
};

// Refuses an engine built for another target; the message names the differing field.
Status check_target(const runtime::TargetRecord& target);

}  // namespace voxrt
