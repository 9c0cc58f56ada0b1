#include "stream/wake_word.h"

#include <algorithm>
#include <sstream>

namespace voxrt::stream {
namespace {

constexpr int kMel = 0, kEmbedding = 1, kHead = 2;
constexpr float kInt16Scale = 32768.0f;

}  // namespace

Status WakeWordConfig::validate() const {
  if (melspectrogram_engine.empty() || embedding_engine.empty() || head_engine.empty())
    return invalid_argument("wake word ", to_string(), ": the three engine paths are required");
  if (!(threshold > 0 && threshold <= 1))
    return invalid_argument("wake word ", to_string(), ": threshold must be in (0, 1]");
  if (warmup_predictions < 0 || threads < 1)
    return invalid_argument("wake word ", to_string(),
                            ": expected warmup_predictions >= 0 and threads >= 1");
  return Status::ok();
}

std::string WakeWordConfig::to_string() const {
  std::ostringstream out;
  out << "{melspectrogram=" << melspectrogram_engine << " embedding=" << embedding_engine
      << " head=" << head_engine << " threshold=" << threshold
      << " warmup_predictions=" << warmup_predictions
      << " rearm_after_utterance=" << rearm_after_utterance << "}";
  return out.str();
}

Expected<std::shared_ptr<WakeWordModels>> WakeWordModels::load(const WakeWordConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto m = std::shared_ptr<WakeWordModels>(new WakeWordModels());
  m->config_ = config;
  const std::string paths[3] = {config.melspectrogram_engine, config.embedding_engine,
                                config.head_engine};
  for (int i = 0; i < 3; ++i) {
    VOXRT_ASSIGN_OR_RETURN(m->engines_[i], Engine::load_file(paths[i]));
    if (m->engines_[i]->inputs().size() != 1 || m->engines_[i]->outputs().empty()) {
      return invalid_argument(paths[i], ": a wake-word model has one input, found ",
                              m->engines_[i]->inputs().size());
    }
    VOXRT_ASSIGN_OR_RETURN(m->contexts_[i], m->engines_[i]->create_context(config.threads));
  }
  const auto& head = m->engines_[kHead]->inputs()[0].dims;
  if (head.size() != 3 || head[1] < 1 || head[2] != kEmbeddingDim) {
    return invalid_argument(config.head_engine, ": a wake-word head takes [1, N, ", kEmbeddingDim,
                            "] embeddings, this one takes ", dims_to_string(head));
  }
  m->head_window_ = static_cast<int>(head[1]);
  const auto& embedding = m->engines_[kEmbedding]->inputs()[0].dims;
  if (embedding.size() != 4 || embedding[1] != kEmbeddingWindowFrames || embedding[2] != kMelBins) {
    return invalid_argument(config.embedding_engine, ": the embedding model takes [1, ",
                            kEmbeddingWindowFrames, ", ", kMelBins,
                            ", 1] mel frames, this one takes ", dims_to_string(embedding));
  }
  return m;
}

Expected<std::vector<Tensor>> WakeWordModels::run(int which, std::vector<Tensor> inputs) {
  ++engine_calls_;
  return contexts_[which]->run(inputs);
}

WakeWordDetector::WakeWordDetector(std::shared_ptr<WakeWordModels> models,
                                   std::int64_t start_sample)
    : models_(std::move(models)),
      previous_tail_(static_cast<std::size_t>(WakeWordModels::kMelContextSamples), 0.0f),
      start_sample_(start_sample) {
  for (int i = 0; i < WakeWordModels::kEmbeddingWindowFrames; ++i)
    mel_frames_.emplace_back(static_cast<std::size_t>(WakeWordModels::kMelBins), 1.0f);
  for (int i = 0; i < models_->head_window(); ++i)
    embeddings_.emplace_back(static_cast<std::size_t>(WakeWordModels::kEmbeddingDim), 0.0f);
}

void WakeWordDetector::accept_waveform(std::span<const float> samples) {
  pending_.insert(pending_.end(), samples.begin(), samples.end());
}

Status WakeWordDetector::process_chunk() {
  constexpr int kChunk = WakeWordModels::kChunkSamples;
  constexpr int kContext = WakeWordModels::kMelContextSamples;
  if (!has_chunk()) return failed_precondition("wake word: no full chunk pending");
  Tensor audio = Tensor::uninitialized(DType::kF32, {1, kChunk + kContext});
  float* a = audio.data<float>();
  for (int i = 0; i < kContext; ++i)
    a[i] = previous_tail_[static_cast<std::size_t>(i)] * kInt16Scale;
  for (int i = 0; i < kChunk; ++i)
    a[kContext + i] = pending_[static_cast<std::size_t>(i)] * kInt16Scale;
  std::copy(pending_.begin() + (kChunk - kContext), pending_.begin() + kChunk,
            previous_tail_.begin());
  pending_.erase(pending_.begin(), pending_.begin() + kChunk);
  ++chunks_;

  VOXRT_ASSIGN_OR_RETURN(auto mel, models_->run(kMel, {std::move(audio)}));
  const Tensor& spec = mel[0];
  const std::int64_t values = spec.element_count();
  if (values % WakeWordModels::kMelBins != 0 || values == 0) {
    return invalid_argument("wake word: the melspectrogram model returned ",
                            dims_to_string(spec.dims()), ", expected [..., frames, 32]");
  }
  const std::int64_t frames = values / WakeWordModels::kMelBins;
  for (std::int64_t f = 0; f < frames; ++f) {
    std::vector<float> frame(static_cast<std::size_t>(WakeWordModels::kMelBins));
    for (int k = 0; k < WakeWordModels::kMelBins; ++k)
      frame[static_cast<std::size_t>(k)] =
          spec.data<float>()[f * WakeWordModels::kMelBins + k] / 10.0f + 2.0f;
    mel_frames_.push_back(std::move(frame));
  }
  while (static_cast<int>(mel_frames_.size()) > WakeWordModels::kEmbeddingWindowFrames)
    mel_frames_.pop_front();

  Tensor window = Tensor::uninitialized(
      DType::kF32, {1, WakeWordModels::kEmbeddingWindowFrames, WakeWordModels::kMelBins, 1});
  float* w = window.data<float>();
  for (const auto& frame : mel_frames_) w = std::copy(frame.begin(), frame.end(), w);
  VOXRT_ASSIGN_OR_RETURN(auto embedding, models_->run(kEmbedding, {std::move(window)}));
  if (embedding[0].element_count() != WakeWordModels::kEmbeddingDim) {
    return invalid_argument("wake word: the embedding model returned ",
                            dims_to_string(embedding[0].dims()), ", expected 96 values");
  }
  embeddings_.emplace_back(embedding[0].data<float>(),
                           embedding[0].data<float>() + WakeWordModels::kEmbeddingDim);
  embeddings_.pop_front();

  const int n = models_->head_window();
  Tensor history = Tensor::uninitialized(DType::kF32, {1, n, WakeWordModels::kEmbeddingDim});
  float* h = history.data<float>();
  for (const auto& e : embeddings_) h = std::copy(e.begin(), e.end(), h);
  VOXRT_ASSIGN_OR_RETURN(auto score, models_->run(kHead, {std::move(history)}));
  if (score[0].element_count() < 1) return invalid_argument("wake word: the head returned nothing");
  last_score_ = chunks_ <= models_->config().warmup_predictions ? 0.0f : score[0].data<float>()[0];
  max_score_ = std::max(max_score_, last_score_);
  if (!fired_ && last_score_ >= models_->config().threshold) {
    fired_ = true;
    fired_at_sample_ = samples_scored();
  }
  return Status::ok();
}

}  // namespace voxrt::stream
