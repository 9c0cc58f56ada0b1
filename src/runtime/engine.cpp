#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "backends/cpu/cpu_backend.h"
#include "backends/profile_fit.h"
#include "runtime/device_plugin.h"
#include "runtime/engine_description.h"
#include "runtime/engine_impl.h"

namespace voxrt {
namespace {

std::set<std::string> isa_flags(const std::string& fingerprint) {
  std::set<std::string> flags;
  const auto open = fingerprint.find('[');
  const auto close = fingerprint.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return flags;
  std::stringstream list(fingerprint.substr(open + 1, close - open - 1));
  std::string flag;
  while (std::getline(list, flag, ',')) {
    if (!flag.empty()) flags.insert(flag);
  }
  return flags;
}

// Whether some node (If branches included) records another tactic for `profile` than for 0.
bool tactics_differ(const ir::Graph& graph, int profile) {
  for (const ir::Node* node : graph.nodes()) {
    if (runtime::recorded_tactic(*node, profile) != runtime::recorded_tactic(*node, 0)) return true;
    for (const char* branch : {"then_branch", "else_branch"}) {
      if (auto sub = node->attrs.get_graph(branch); sub && tactics_differ(*sub, profile))
        return true;
    }
  }
  return false;
}

Expected<std::shared_ptr<const Engine>> finish_load(std::unique_ptr<EngineImpl> impl,
                                                    const char* image, std::size_t size) {
  VOXRT_ASSIGN_OR_RETURN(impl->contents,
                         runtime::deserialize_engine(image, size, impl->image_keepalive));
  VOXRT_RETURN_IF_ERROR(check_target(impl->contents.target));
  impl->file_bytes = size;
  if (impl->contents.target.device == DeviceKind::kCpu) {
    VOXRT_ASSIGN_OR_RETURN(impl->plan, runtime::Plan::compile(*impl->contents.graph,
                                                              runtime::TacticPolicy::kRecorded));
    // A profile whose tactics differ from profile 0's somewhere gets its own plan (kernels with
    // those tactics; weights repacked for them).
    const int profiles = static_cast<int>(impl->contents.profiles.size());
    if (profiles > 1) impl->profile_plans.resize(static_cast<std::size_t>(profiles));
    for (int p = 1; p < profiles; ++p) {
      if (!tactics_differ(*impl->contents.graph, p)) continue;
      VOXRT_ASSIGN_OR_RETURN(
          impl->profile_plans[static_cast<std::size_t>(p)],
          runtime::Plan::compile(*impl->contents.graph, runtime::TacticPolicy::kRecorded, p));
    }
  } else {
    // check_target found the backend; weights go to the device here, once.
    VOXRT_ASSIGN_OR_RETURN(impl->device_executable,
                           backends::device_backend(impl->contents.target.device)
                               ->compile(*impl->contents.graph, impl->contents.target.precision,
                                         impl->contents.profiles));
  }
  for (const ir::Value* v : impl->contents.graph->inputs)
    impl->inputs.push_back(runtime::describe_value(*v));
  for (const ir::Value* v : impl->contents.graph->outputs)
    impl->outputs.push_back(runtime::describe_value(*v));
  return Engine::create(std::move(impl));
}

}  // namespace

Status check_target(const runtime::TargetRecord& target) {
  if (target.builder_version != runtime::kBuilderVersion) {
    return version_mismatch("engine target: builder_version is '", target.builder_version,
                            "', this runtime is '", runtime::kBuilderVersion,
                            "'; rebuild the engine");
  }
  if (target.device != DeviceKind::kCpu) {
    auto backend = runtime::load_device_backend(target.device);
    if (!backend) {
      return unsupported("this engine was built for CUDA (voxrt build --device cuda), and ",
                         backend.status().message(),
                         "; build a CPU engine for this machine (voxrt build without --device)");
    }
    return (*backend)->check_fingerprint(target.fingerprint);
  }
  // Tactics may use any ISA extension the build machine had; refuse if one is missing here.
  const auto built_with = isa_flags(target.fingerprint);
  const auto here = isa_flags(backends::cpu::cpu_fingerprint());
  std::string missing;
  for (const auto& f : built_with) {
    if (!here.count(f)) missing += (missing.empty() ? "" : ",") + f;
  }
  if (!missing.empty()) {
    return version_mismatch("engine target: fingerprint '", target.fingerprint,
                            "' needs CPU features [", missing, "] that this machine ('",
                            backends::cpu::cpu_fingerprint(), "') lacks; rebuild the engine here");
  }
  return Status::ok();
}

Expected<int> EngineImpl::select_profile(std::span<const Tensor> run_inputs) const {
  return backends::first_fitting_profile(
      contents.profiles, run_inputs.size(), [&](std::size_t i) { return inputs[i].name; },
      [&](std::size_t i) { return run_inputs[i].dims(); });
}

Expected<std::vector<Tensor>> ExecutionContextImpl::run(std::span<const Tensor> inputs,
                                                        const runtime::StepObserver* observer) {
  if (inputs.size() != engine_.inputs.size()) {
    std::string names;
    for (const auto& i : engine_.inputs) names += (names.empty() ? "" : ", ") + i.name;
    return invalid_argument("the engine takes ", engine_.inputs.size(), " inputs (", names,
                            "), got ", inputs.size());
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_valid())
      return invalid_argument("input '", engine_.inputs[i].name, "' is missing");
  }
  VOXRT_ASSIGN_OR_RETURN(int profile, engine_.select_profile(inputs));
  std::vector<Tensor> outputs;
  if (engine_.device_executable) {
    // Per-node observers are a CPU-plan feature; device runs report per-node times through
    // DeviceSession::run_profiled instead.
    VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
    VOXRT_RETURN_IF_ERROR(session->run(inputs, outputs));
    return outputs;
  }
  const runtime::Plan& plan = engine_.plan_for_profile(profile);
  last_plan_ = &plan;
  VOXRT_RETURN_IF_ERROR(plan.execute(inputs, outputs, context_, observer, &workspaces_[&plan]));
  return outputs;
}

Status ExecutionContextImpl::check_device_inputs(std::span<const DeviceTensor> inputs) const {
  if (!engine_.device_executable) {
    return failed_precondition(
        "enqueue and output_dims take device memory and need a CUDA engine; this is a CPU "
        "engine: use run");
  }
  if (inputs.size() != engine_.inputs.size())
    return invalid_argument("the engine takes ", engine_.inputs.size(), " inputs, got ",
                            inputs.size());
  // The profile check reads dims only.
  std::vector<Tensor> shapes;
  for (const DeviceTensor& t : inputs)
    shapes.push_back(Tensor::wrap(t.dtype, t.dims, nullptr, nullptr));
  return engine_.select_profile(shapes).status();
}

Status ExecutionContextImpl::enqueue(std::span<const DeviceTensor> inputs,
                                     std::span<const DeviceTensor> outputs, void* stream) {
  VOXRT_RETURN_IF_ERROR(check_device_inputs(inputs));
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->enqueue(inputs, outputs, stream);
}

Expected<std::vector<Dims>> ExecutionContextImpl::output_dims(
    std::span<const DeviceTensor> inputs) {
  VOXRT_RETURN_IF_ERROR(check_device_inputs(inputs));
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->output_dims(inputs);
}

Expected<backends::DeviceSession*> ExecutionContextImpl::device_session() {
  if (!engine_.device_executable)
    return failed_precondition("this is a CPU engine; device state pools need a device engine");
  if (!device_session_) {
    VOXRT_ASSIGN_OR_RETURN(device_session_, engine_.device_executable->create_session());
  }
  return device_session_.get();
}

Status ExecutionContextImpl::create_device_state_pool(
    std::span<const backends::DeviceStateSpec> states, int capacity) {
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->create_state_pool(states, capacity);
}

Status ExecutionContextImpl::run_device_slots(std::span<const Tensor> inputs,
                                              std::span<const int> slots,
                                              std::vector<Tensor>& outputs) {
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->run_slots(inputs, slots, outputs);
}

Status ExecutionContextImpl::reset_device_slot(int slot) {
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->reset_slot(slot);
}

Expected<Tensor> ExecutionContextImpl::read_device_slot_state(int slot, std::size_t index) {
  VOXRT_ASSIGN_OR_RETURN(backends::DeviceSession * session, device_session());
  return session->read_slot_state(slot, index);
}

// ---- public API ------------------------------------------------------------------------------

Engine::Engine(std::unique_ptr<EngineImpl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

std::shared_ptr<const Engine> Engine::create(std::unique_ptr<EngineImpl> impl) {
  return std::shared_ptr<const Engine>(new Engine(std::move(impl)));
}

// An ONNX ModelProto starts with field 1, ir_version (tag 0x08, a small varint), then another
// ModelProto field (producer_name 0x12, producer_version 0x1a, domain 0x22, model_version 0x28,
// doc_string 0x32, graph 0x3a, opset_import 0x42); an engine starts with "VOXRTENG".
static bool looks_like_onnx(const char* bytes, std::size_t size) {
  if (size < 3 || bytes[0] != 0x08 || bytes[1] < 1 || bytes[1] > 30) return false;
  const auto next = static_cast<unsigned char>(bytes[2]);
  return next == 0x12 || next == 0x1a || next == 0x22 || next == 0x28 || next == 0x32 ||
         next == 0x3a || next == 0x42;
}

Expected<std::shared_ptr<const Engine>> Engine::load_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path, ": cannot open the engine file: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size <= 0) {
    ::close(fd);
    return io_error(path, ": the engine file is empty or cannot be read");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path, ": is a directory, expected an engine file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  void* mapped = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (mapped == MAP_FAILED) return io_error(path, ": mmap failed: ", std::strerror(errno));
  if (looks_like_onnx(static_cast<const char*>(mapped), size)) {
    ::munmap(mapped, size);
    return invalid_argument(path, " is an ONNX model, not a voxrt engine: compile it first, e.g. ",
                            "voxrt build --onnx ", path, " --engine model.engine");
  }
  auto impl = std::make_unique<EngineImpl>();
  impl->image_keepalive = std::shared_ptr<void>(mapped, [size](void* p) { ::munmap(p, size); });
  auto engine = finish_load(std::move(impl), static_cast<const char*>(mapped), size);
  if (!engine) return engine.status().with_context(path);
  return engine;
}

Expected<std::shared_ptr<const Engine>> Engine::load_bytes(std::string bytes) {
  auto impl = std::make_unique<EngineImpl>();
  // Weights alias the bytes: copy them into 64-byte aligned storage that the engine keeps.
  Tensor image = Tensor::uninitialized(DType::kU8, {static_cast<std::int64_t>(bytes.size())});
  std::memcpy(image.raw_data(), bytes.data(), bytes.size());
  auto holder = std::make_shared<Tensor>(image);
  impl->image_keepalive = holder;
  return finish_load(std::move(impl), static_cast<const char*>(holder->raw_data()), bytes.size());
}

const std::vector<TensorInfo>& Engine::inputs() const {
  return impl_->inputs;
}
const std::vector<TensorInfo>& Engine::outputs() const {
  return impl_->outputs;
}
const std::map<std::string, std::string>& Engine::metadata() const {
  return impl_->contents.graph->metadata;
}

Expected<std::unique_ptr<ExecutionContext>> Engine::create_context(int threads) const {
  if (threads < 1 || threads > 256)
    return invalid_argument("create_context: threads must be 1..256, got ", threads);
  return std::unique_ptr<ExecutionContext>(
      new ExecutionContext(std::make_unique<ExecutionContextImpl>(*impl_, threads)));
}

ExecutionContext::ExecutionContext(std::unique_ptr<ExecutionContextImpl> impl)
    : impl_(std::move(impl)) {}
ExecutionContext::~ExecutionContext() = default;

Expected<std::vector<Tensor>> ExecutionContext::run(std::span<const Tensor> inputs) {
  return impl_->run(inputs);
}

Status ExecutionContext::enqueue(std::span<const DeviceTensor> inputs,
                                 std::span<const DeviceTensor> outputs, void* cuda_stream) {
  return impl_->enqueue(inputs, outputs, cuda_stream);
}

Expected<std::vector<Dims>> ExecutionContext::output_dims(std::span<const DeviceTensor> inputs) {
  return impl_->output_dims(inputs);
}

}  // namespace voxrt
