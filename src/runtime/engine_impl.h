// What an Engine holds once loaded: the deserialized contents, the compiled plan and the I/O
// description. Immutable after load.
#pragma once

#include <map>
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
  std::unique_ptr<runtime::Plan> plan;  // CPU engines: profile 0's tactics
  // CPU engines: per optimization profile, a plan with that profile's tactics, or null where
  // they are profile 0's (then `plan` runs it). Empty for single-profile engines.
  std::vector<std::unique_ptr<runtime::Plan>> profile_plans;
  // Device (CUDA) engines: the whole graph on the device; plan is null.
  std::unique_ptr<backends::DeviceExecutable> device_executable;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  std::shared_ptr<void> image_keepalive;
  std::size_t file_bytes = 0;

  // Index of the first profile whose ranges contain these input dims, or an error naming the
  // input and the ranges. Inputs no profile mentions are not checked here.
  Expected<int> select_profile(std::span<const Tensor> inputs) const;
  // The CPU plan for inputs that fit profile `profile` (-1: the engine has no profiles).
  const runtime::Plan& plan_for_profile(int profile) const {
    if (profile > 0 && static_cast<std::size_t>(profile) < profile_plans.size() &&
        profile_plans[static_cast<std::size_t>(profile)])
      return *profile_plans[static_cast<std::size_t>(profile)];
    return *plan;
  }
};

class ExecutionContextImpl {
 public:
  ExecutionContextImpl(const EngineImpl& engine, int threads) : engine_(engine), pool_(threads) {
    context_.pool = &pool_;
  }
  Expected<std::vector<Tensor>> run(std::span<const Tensor> inputs,
                                    const runtime::StepObserver* observer = nullptr);
  const EngineImpl& engine() const { return engine_; }
  // The CPU plan of the last run (which profile's kernels ran), for tests and tools.
  const runtime::Plan* last_plan() const { return last_plan_; }

  // Device engines only: a run on the caller's stream with device memory in and out
  // (ExecutionContext::enqueue), and the output dims it needs.
  Status enqueue(std::span<const DeviceTensor> inputs, std::span<const DeviceTensor> outputs,
                 void* stream);
  Expected<std::vector<Dims>> output_dims(std::span<const DeviceTensor> inputs);

  // Device engines only: the GPU-resident state slot pool of this context's session
  // (DeviceSession says how states are gathered and scattered on the device).
  Status create_device_state_pool(std::span<const backends::DeviceStateSpec> states, int capacity);
  Status run_device_slots(std::span<const Tensor> inputs, std::span<const int> slots,
                          std::vector<Tensor>& outputs);
  Status reset_device_slot(int slot);
  Expected<Tensor> read_device_slot_state(int slot, std::size_t index);

 private:
  Expected<backends::DeviceSession*> device_session();
  // A device engine, the right number of inputs, dims that fit a profile.
  Status check_device_inputs(std::span<const DeviceTensor> inputs) const;

  const EngineImpl& engine_;
  ThreadPool pool_;
  backends::KernelContext context_;
  // CPU engines: shapes and buffers kept between runs, one workspace per plan that ran.
  std::map<const runtime::Plan*, runtime::PlanWorkspace> workspaces_;
  const runtime::Plan* last_plan_ = nullptr;
  std::unique_ptr<backends::DeviceSession> device_session_;  // made at the first run
};

// Refuses an engine built for another target; the message names the differing field.
Status check_target(const runtime::TargetRecord& target);

}  // namespace voxrt
