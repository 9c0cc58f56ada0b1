#include "stream/ctc/offline_ctc_model.h"

#include <algorithm>

#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/ctc/ctc_search.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
namespace {

// Hops per segment when the model does not say: 30 s of 10 ms hops.
constexpr int kDefaultMaxFrames = 3000;

int input_index(const Engine& engine, const std::string& name) {
  const auto& inputs = engine.inputs();
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].name == name) return static_cast<int>(i);
  return -1;
}

}  // namespace

class OfflineCtcStream final : public FamilyStream {
 public:
  OfflineCtcStream(std::shared_ptr<OfflineCtcModel> model, CtcSearch search)
      : model_(std::move(model)), search_(std::move(search)) {
    ++model_->streams_open_;
  }
  ~OfflineCtcStream() override { --model_->streams_open_; }

  Status accept(const float* log_probs, int frames) { return search_.accept(log_probs, frames); }
  Status accept_skipped_frames(int output_frames) override {
    return search_.accept_blank_frames(output_frames);
  }
  DecoderProgress progress() const override { return search_.progress(); }
  decode::DecodingResult partial() const override { return search_.partial(); }
  decode::DecodingResult finalize() override { return search_.finalize(); }
  void reset_utterance() override { search_.reset_utterance(); }
  // Every segment starts from nothing: there is no model state to reset.
  Status reset_state() override { return Status::ok(); }

 private:
  std::shared_ptr<OfflineCtcModel> model_;
  CtcSearch search_;
};

int OfflineCtcModel::output_frames_for(int feature_frames, int subsampling) {
  int frames = feature_frames;
  for (int factor = subsampling; factor > 1; factor /= 2) frames = (frames + 1) / 2;
  return frames;
}

Expected<std::shared_ptr<OfflineCtcModel>> OfflineCtcModel::create(
    std::shared_ptr<const Engine> engine, const std::map<std::string, std::string>& metadata,
    const std::string& engine_path, const std::string& model_dir, const RecognizerConfig& config) {
  auto m = std::shared_ptr<OfflineCtcModel>(new OfflineCtcModel());
  m->engine_ = std::move(engine);
  m->metadata_ = metadata;
  VOXRT_ASSIGN_OR_RETURN(auto nemo, audio::NemoFeatureConfig::from_metadata(metadata));
  VOXRT_ASSIGN_OR_RETURN(auto front_end, audio::NemoFeatureComputer::create(nemo));
  m->front_end_.emplace(std::move(front_end));
  m->feature_config_ = audio::FeatureConfig::waveform(
      nemo.sample_rate_hz, 1000.0 * nemo.hop_samples() / nemo.sample_rate_hz);
  VOXRT_RETURN_IF_ERROR(m->feature_config_.validate().with_context(engine_path));
  VOXRT_ASSIGN_OR_RETURN(m->layout_.subsampling,
                         metadata_int(metadata, "voxrt.subsampling", 1, true, engine_path));
  const int s = m->layout_.subsampling;
  if ((s & (s - 1)) != 0) {
    return unsupported(engine_path, ": voxrt.subsampling ", s,
                       " is not a power of two (NeMo's striding subsampling halves the length)");
  }
  VOXRT_ASSIGN_OR_RETURN(
      m->layout_.chunk_frames,
      metadata_int(metadata, "voxrt.offline.max_frames", kDefaultMaxFrames, false, engine_path));
  m->layout_.shift_frames = m->layout_.chunk_frames;
  m->layout_.min_chunk_frames = 1;
  m->layout_.pad_frame.assign(static_cast<std::size_t>(m->feature_config_.output_dim()), 0.0f);
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  VOXRT_ASSIGN_OR_RETURN(
      m->time_base_,
      time_base_from_metadata(metadata, s, m->feature_config_.frame_shift_ms, engine_path));
  VOXRT_ASSIGN_OR_RETURN(m->features_input_,
                         metadata_string(metadata, "voxrt.offline.features_input", engine_path));
  VOXRT_ASSIGN_OR_RETURN(m->length_input_,
                         metadata_string(metadata, "voxrt.offline.length_input", engine_path));
  VOXRT_ASSIGN_OR_RETURN(m->output_,
                         metadata_string(metadata, "voxrt.offline.output", engine_path));
  const auto& inputs = m->engine_->inputs();
  if (inputs.size() != 2 || input_index(*m->engine_, m->features_input_) < 0 ||
      input_index(*m->engine_, m->length_input_) < 0) {
    std::string found;
    for (const auto& i : inputs) found += (found.empty() ? "" : ", ") + i.name;
    return invalid_argument(engine_path, ": a ctc_offline engine takes '", m->features_input_,
                            "' and '", m->length_input_, "'; this one takes ", found);
  }
  const auto& outputs = m->engine_->outputs();
  if (outputs.empty() || outputs[0].name != m->output_) {
    return invalid_argument(engine_path, ": expected the first output '", m->output_, "', found '",
                            outputs.empty() ? std::string("(none)") : outputs[0].name, "'");
  }
  if (!config.lm_path.empty()) {
    VOXRT_ASSIGN_OR_RETURN(auto lm, decode::ArpaLm::load(config.lm_path));
    m->lm_ = std::make_shared<const decode::ArpaLm>(std::move(lm));
    m->lexicon_ = std::make_shared<const decode::Lexicon>(decode::Lexicon::from_lm(*m->lm_));
  }
  VOXRT_ASSIGN_OR_RETURN(m->context_, m->engine_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->max_batch_,
                         resolve_max_batch(*m->engine_, m->features_input_, config.max_batch,
                                           RecognizerConfig::kDefaultMaxBatch, engine_path));
  m->max_streams_ = config.max_streams;
  return m;
}

DeviceKind OfflineCtcModel::device() const {
  return engine_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> OfflineCtcModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  if (streams_open_.load() >= max_streams_) {
    return resource_exhausted("ctc_offline: ", streams_open_.load(),
                              " streams are open, the most the recognizer's max_streams allows");
  }
  VOXRT_ASSIGN_OR_RETURN(
      CtcSearch search,
      CtcSearch::create({vocabulary_, time_base_, lm_, lexicon_}, options, decoding));
  return std::unique_ptr<FamilyStream>(
      std::make_unique<OfflineCtcStream>(shared_from_this(), std::move(search)));
}

Status OfflineCtcModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  const int hop = feature_config_.output_dim();
  const int mels = front_end_->config().n_mels;
  // Each stream's segment is its own utterance: features (normalised over its own audio only),
  // then all of them zero-padded to the longest, with each one's length, in one engine call.
  std::vector<audio::NemoFeatures> features;
  features.reserve(batch.size());
  int longest = 1;
  for (const ChunkInput& input : batch) {
    const int valid = std::clamp(input.valid_frames, 0, frames);
    if (valid == 0) {
      features.emplace_back();
      continue;
    }
    VOXRT_ASSIGN_OR_RETURN(auto f, front_end_->compute(std::span<const float>(
                                       input.features, static_cast<std::size_t>(valid) *
                                                           static_cast<std::size_t>(hop))));
    longest = std::max(longest, f.padded_frames);
    features.push_back(std::move(f));
  }
  const auto rows = static_cast<std::int64_t>(batch.size());
  Tensor signal = Tensor::zeros(DType::kF32, {rows, mels, longest});
  std::vector<std::int64_t> lengths(batch.size(), 0);
  const float pad_value = static_cast<float>(front_end_->config().pad_value);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    float* row = signal.data<float>() + b * static_cast<std::size_t>(mels) * longest;
    std::fill(row, row + static_cast<std::size_t>(mels) * longest, pad_value);
    const audio::NemoFeatures& f = features[b];
    for (int m = 0; m < f.n_mels; ++m)
      std::copy_n(f.values.data() + static_cast<std::size_t>(m) * f.padded_frames, f.padded_frames,
                  row + static_cast<std::size_t>(m) * longest);
    lengths[b] = f.frames;
  }
  std::vector<Tensor> inputs(2);
  inputs[static_cast<std::size_t>(input_index(*engine_, features_input_))] = std::move(signal);
  inputs[static_cast<std::size_t>(input_index(*engine_, length_input_))] =
      Tensor::from_vector<std::int64_t>({rows}, lengths);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context_->run(inputs));
  const Tensor& log_probs = outputs[0];
  if (log_probs.rank() != 3 || log_probs.dim(0) != rows || log_probs.dim(2) != vocab_size()) {
    return invalid_argument(output_, " is ", dims_to_string(log_probs.dims()), ", expected [", rows,
                            ", T, ", vocab_size(), "]");
  }
  const auto out_frames = static_cast<int>(log_probs.dim(1));
  for (std::size_t b = 0; b < batch.size(); ++b) {
    if (features[b].frames == 0) continue;
    const int valid =
        std::min(out_frames, output_frames_for(features[b].frames, layout_.subsampling));
    auto* stream = static_cast<OfflineCtcStream*>(batch[b].stream);
    VOXRT_RETURN_IF_ERROR(stream->accept(
        log_probs.data<float>() + b * static_cast<std::size_t>(out_frames) * vocab_size(), valid));
  }
  return Status::ok();
}

}  // namespace voxrt::stream
