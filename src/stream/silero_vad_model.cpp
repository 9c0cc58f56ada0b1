#include "stream/silero_vad_model.h"

#include <algorithm>
#include <cstring>

#include "runtime/engine_impl.h"

namespace voxrt::stream {
namespace {

int find(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

Expected<std::shared_ptr<SileroVadModel>> SileroVadModel::load(const std::string& engine_path,
                                                               int threads) {
  VOXRT_ASSIGN_OR_RETURN(auto engine, Engine::load_file(engine_path));
  auto model = create(std::move(engine), threads);
  if (!model) return invalid_argument(engine_path, ": ", model.status().message());
  return model;
}

Expected<std::shared_ptr<SileroVadModel>> SileroVadModel::create(
    std::shared_ptr<const Engine> engine, int threads) {
  auto m = std::shared_ptr<SileroVadModel>(new SileroVadModel());
  const auto& inputs = engine->inputs();
  const auto& outputs = engine->outputs();
  m->input_index_ = find(inputs, "input");
  m->state_index_ = find(inputs, "state");
  m->sr_index_ = find(inputs, "sr");
  m->output_index_ = find(outputs, "output");
  m->state_out_index_ = find(outputs, "stateN");
  if (m->input_index_ < 0 || m->state_index_ < 0 || m->output_index_ < 0 ||
      m->state_out_index_ < 0) {
    return invalid_argument(
        "a Silero VAD v5 engine has inputs 'input' [B, 576], 'state' [2, B, 128] (and 'sr', "
        "unless built with --fixed-input sr=16000) and outputs 'output' and 'stateN'; this one "
        "has ",
        inputs.size(), " inputs and ", outputs.size(), " outputs");
  }
  const TensorInfo& state = inputs[static_cast<std::size_t>(m->state_index_)];
  if (state.dims.size() != 3 || state.dims[0] != 2 || state.dims[2] != 128) {
    return invalid_argument("Silero VAD engine: 'state' is ", dims_to_string(state.dims),
                            ", expected [2, B, 128] (Silero VAD v5)");
  }
  // The window size comes from the profile of 'input' (or its static dims): 576 for v5 at 16 kHz.
  const TensorInfo& input = inputs[static_cast<std::size_t>(m->input_index_)];
  if (input.dims.size() != 2)
    return invalid_argument("Silero VAD engine: 'input' is ", dims_to_string(input.dims),
                            ", expected [B, samples]");
  m->input_samples_ = static_cast<int>(input.dims[1]);
  m->max_batch_ = input.dims[0] > 0 ? static_cast<int>(input.dims[0]) : 1;
  for (const auto& profile : engine->impl().contents.profiles) {
    auto it = profile.inputs.find("input");
    if (it == profile.inputs.end() || it->second.max.size() != 2) continue;
    if (it->second.min[1] == it->second.max[1])
      m->input_samples_ = static_cast<int>(it->second.max[1]);
    m->max_batch_ = std::max(m->max_batch_, static_cast<int>(it->second.max[0]));
    auto st = profile.inputs.find("state");
    if (st != profile.inputs.end() && st->second.max.size() == 3)
      m->max_batch_ = std::min(m->max_batch_, static_cast<int>(st->second.max[1]));
  }
  if (m->input_samples_ <= 0) {
    return invalid_argument(
        "Silero VAD engine: the window size of 'input' is not fixed; build it with --profile "
        "input:1x576/8x576/32x576");
  }
  if (state.dims[1] > 0) m->max_batch_ = static_cast<int>(state.dims[1]);
  VOXRT_ASSIGN_OR_RETURN(m->context_, engine->create_context(threads));
  m->engine_ = std::move(engine);
  return m;
}

Status SileroVadModel::run(std::span<const float* const> windows, std::span<float* const> states,
                           std::span<float> probabilities) {
  const auto batch = static_cast<std::int64_t>(windows.size());
  if (batch < 1 || batch > max_batch_ || states.size() != windows.size() ||
      probabilities.size() != windows.size()) {
    return invalid_argument("SileroVadModel::run: ", batch, " windows, ", states.size(),
                            " states, ", probabilities.size(), " outputs; expected 1..", max_batch_,
                            " of each");
  }
  std::vector<Tensor> inputs(engine_->inputs().size());
  Tensor input = Tensor::uninitialized(DType::kF32, {batch, input_samples_});
  Tensor state = Tensor::uninitialized(DType::kF32, {2, batch, 128});
  for (std::int64_t b = 0; b < batch; ++b) {
    std::memcpy(input.data<float>() + b * input_samples_, windows[static_cast<std::size_t>(b)],
                sizeof(float) * static_cast<std::size_t>(input_samples_));
    for (int k = 0; k < 2; ++k) {
      std::memcpy(state.data<float>() + (k * batch + b) * 128,
                  states[static_cast<std::size_t>(b)] + k * 128, sizeof(float) * 128);
    }
  }
  inputs[static_cast<std::size_t>(input_index_)] = std::move(input);
  inputs[static_cast<std::size_t>(state_index_)] = std::move(state);
  if (sr_index_ >= 0) inputs[static_cast<std::size_t>(sr_index_)] = Tensor::scalar_i64(16000);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context_->run(inputs));
  ++engine_calls_;
  windows_run_ += batch;
  const Tensor& prob = outputs[static_cast<std::size_t>(output_index_)];
  const Tensor& next = outputs[static_cast<std::size_t>(state_out_index_)];
  if (prob.element_count() != batch || next.element_count() != batch * kStateValues) {
    return internal_error("Silero VAD engine returned output ", dims_to_string(prob.dims()),
                          " and stateN ", dims_to_string(next.dims()), " for a batch of ", batch);
  }
  for (std::int64_t b = 0; b < batch; ++b) {
    probabilities[static_cast<std::size_t>(b)] = prob.data<float>()[b];
    for (int k = 0; k < 2; ++k) {
      std::memcpy(states[static_cast<std::size_t>(b)] + k * 128,
                  next.data<float>() + (k * batch + b) * 128, sizeof(float) * 128);
    }
  }
  return Status::ok();
}

}  // namespace voxrt::stream
