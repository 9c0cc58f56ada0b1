#include "stream/ctc/offline_ctc_model.h"

#include <algorithm>

#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/ctc/ctc_search.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
namespace {

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

Expected<std::shared_ptr<OfflineCtcModel>> OfflineCtcModel::create(
    std::shared_ptr<const Engine> engine, const std::map<std::string, std::string>& metadata,
    const std::string& engine_path, const std::string& model_dir, const RecognizerConfig& config) {
  auto m = std::shared_ptr<OfflineCtcModel>(new OfflineCtcModel());
  m->engine_ = std::move(engine);
  m->metadata_ = metadata;
  VOXRT_ASSIGN_OR_RETURN(auto segments, OfflineSegmentFrontEnd::create(metadata, engine_path));
  m->segments_.emplace(std::move(segments));
  m->layout_ = m->segments_->layout();
  const int s = m->layout_.subsampling;
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  VOXRT_ASSIGN_OR_RETURN(
      m->time_base_,
      time_base_from_metadata(metadata, s, m->feature_config().frame_shift_ms, engine_path));
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
  VOXRT_ASSIGN_OR_RETURN(OfflineSegmentBatch segments, segments_->features(batch, frames));
  const auto rows = static_cast<std::int64_t>(batch.size());
  std::vector<Tensor> inputs(2);
  inputs[static_cast<std::size_t>(input_index(*engine_, features_input_))] =
      std::move(segments.signal);
  inputs[static_cast<std::size_t>(input_index(*engine_, length_input_))] =
      Tensor::from_vector<std::int64_t>({rows}, segments.lengths);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, context_->run(inputs));
  const Tensor& log_probs = outputs[0];
  if (log_probs.rank() != 3 || log_probs.dim(0) != rows || log_probs.dim(2) != vocab_size()) {
    return invalid_argument(output_, " is ", dims_to_string(log_probs.dims()), ", expected [", rows,
                            ", T, ", vocab_size(), "]");
  }
  const auto out_frames = static_cast<int>(log_probs.dim(1));
  for (std::size_t b = 0; b < batch.size(); ++b) {
    if (segments.lengths[b] == 0) continue;
    const int valid =
        std::min(out_frames, segments_->output_frames(static_cast<int>(segments.lengths[b])));
    auto* stream = static_cast<OfflineCtcStream*>(batch[b].stream);
    VOXRT_RETURN_IF_ERROR(stream->accept(
        log_probs.data<float>() + b * static_cast<std::size_t>(out_frames) * vocab_size(), valid));
  }
  return Status::ok();
}

}  // namespace voxrt::stream
