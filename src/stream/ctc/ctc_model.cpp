#include "stream/ctc/ctc_model.h"

#include <algorithm>

#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/ctc/ctc_search.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
class CtcStream final : public FamilyStream {
 public:
  CtcStream(std::shared_ptr<CtcModel> model, int slot, CtcSearch search)
      : model_(std::move(model)), slot_(slot), search_(std::move(search)) {}
  ~CtcStream() override { (void)model_->pool_->release(slot_); }

  Status accept(const float* log_probs, int frames) { return search_.accept(log_probs, frames); }
  Status accept_skipped_frames(int output_frames) override {
    return search_.accept_blank_frames(output_frames);
  }
  DecoderProgress progress() const override { return search_.progress(); }
  decode::DecodingResult partial() const override { return search_.partial(); }
  decode::DecodingResult finalize() override { return search_.finalize(); }
  void reset_utterance() override { search_.reset_utterance(); }
  Status reset_state() override { return model_->pool_->reset(slot_); }

  int slot() const { return slot_; }

 private:
  std::shared_ptr<CtcModel> model_;
  int slot_ = -1;
  CtcSearch search_;
};

Expected<std::shared_ptr<CtcModel>> CtcModel::create(
    std::shared_ptr<const Engine> engine, const std::map<std::string, std::string>& metadata,
    const std::string& engine_path, const std::string& model_dir, const RecognizerConfig& config) {
  auto m = std::shared_ptr<CtcModel>(new CtcModel());
  m->engine_ = std::move(engine);
  VOXRT_ASSIGN_OR_RETURN(m->layout_.chunk_frames,
                         metadata_int(metadata, "voxrt.chunk_frames", 0, true, engine_path));
  VOXRT_ASSIGN_OR_RETURN(
      m->layout_.shift_frames,
      metadata_int(metadata, "voxrt.shift_frames", m->layout_.chunk_frames, false, engine_path));
  if (m->layout_.shift_frames > m->layout_.chunk_frames) {
    return invalid_argument(engine_path, ": voxrt.shift_frames ", m->layout_.shift_frames,
                            " is more than voxrt.chunk_frames ", m->layout_.chunk_frames);
  }
  VOXRT_ASSIGN_OR_RETURN(m->layout_.subsampling,
                         metadata_int(metadata, "voxrt.subsampling", 1, false, engine_path));
  VOXRT_ASSIGN_OR_RETURN(m->feature_config_, audio::FeatureConfig::from_metadata(metadata));
  m->feature_dim_ = m->feature_config_.output_dim();
  VOXRT_ASSIGN_OR_RETURN(m->layout_.pad_frame,
                         chunk_pad_frame(metadata, m->feature_config_, engine_path));
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  VOXRT_ASSIGN_OR_RETURN(m->time_base_,
                         time_base_from_metadata(metadata, m->layout_.subsampling,
                                                 m->feature_config_.frame_shift_ms, engine_path));
  m->metadata_ = metadata;
  if (!config.lm_path.empty()) {
    VOXRT_ASSIGN_OR_RETURN(auto lm, decode::ArpaLm::load(config.lm_path));
    m->lm_ = std::make_shared<const decode::ArpaLm>(std::move(lm));
    m->lexicon_ = std::make_shared<const decode::Lexicon>(decode::Lexicon::from_lm(*m->lm_));
  }
  VOXRT_ASSIGN_OR_RETURN(m->context_, m->engine_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->pool_, StatePool::create(m->engine_, config.max_streams));
  const auto& stream_inputs = m->pool_->stream_inputs();
  auto length_key = metadata.find("voxrt.ctc.length_input");
  const std::size_t want_inputs = length_key == metadata.end() ? 1 : 2;
  if (stream_inputs.size() != want_inputs || m->pool_->stream_outputs().size() != 1) {
    return invalid_argument(
        engine_path, ": a ctc_streaming engine has one non-state input (features), ",
        want_inputs == 2 ? "and the length input voxrt.ctc.length_input names, " : "",
        "and one non-state output (log_probs); this one has ", stream_inputs.size(), " (",
        names_of(stream_inputs), ") and ", m->pool_->stream_outputs().size(), " (",
        names_of(m->pool_->stream_outputs()),
        ") (was it built with --state for every state pair?)");
  }
  if (length_key != metadata.end()) {
    m->length_input_ = index_of(stream_inputs, length_key->second);
    if (m->length_input_ < 0 || stream_inputs[m->length_input_].dtype != DType::kI64) {
      return invalid_argument(engine_path, ": voxrt.ctc.length_input '", length_key->second,
                              "': expected an int64 [batch] input of the engine, found inputs ",
                              names_of(stream_inputs));
    }
    // The length counts the chunk's audio frames; with a lookahead, the frames a chunk holds
    // and the frames it consumes differ, which the family does not track.
    if (m->layout_.shift_frames != m->layout_.chunk_frames) {
      return invalid_argument(engine_path, ": voxrt.ctc.length_input needs voxrt.shift_frames = ",
                              "voxrt.chunk_frames, found ", m->layout_.shift_frames, " and ",
                              m->layout_.chunk_frames);
    }
    m->features_input_ = 1 - m->length_input_;
  }
  // An engine built for whole chunks only (a fixed-frames profile, as GPU engines are: their
  // shape code must fold) takes a stream's last, shorter chunk padded up to what it accepts.
  const std::string& features_name = stream_inputs[m->features_input_].name;
  const auto& profiles = m->engine_->impl().contents.profiles;
  int accepted_frames = profiles.empty() ? 1 : m->layout_.chunk_frames;
  for (const auto& profile : profiles) {
    auto it = profile.inputs.find(features_name);
    const bool bounded = it != profile.inputs.end() && it->second.min.size() >= 2;
    accepted_frames = std::min(accepted_frames, bounded ? static_cast<int>(it->second.min[1]) : 1);
  }
  m->layout_.min_chunk_frames = std::max(1, accepted_frames);
  VOXRT_ASSIGN_OR_RETURN(m->max_batch_,
                         resolve_max_batch(*m->engine_, features_name, config.max_batch,
                                           RecognizerConfig::kDefaultMaxBatch, engine_path));
  if (m->pool_->states_on_device()) {
    // Every batch size the server will use gets its plan and CUDA graph now, not in the middle
    // of serving (StatePool::warm_up).
    std::vector<Tensor> one_row(stream_inputs.size());
    one_row[m->features_input_] =
        Tensor::zeros(DType::kF32, {1, m->layout_.chunk_frames, m->feature_dim_});
    if (m->length_input_ >= 0) {
      one_row[m->length_input_] = Tensor::from_vector<std::int64_t>({1}, {m->layout_.chunk_frames});
    }
    VOXRT_RETURN_IF_ERROR(m->pool_->warm_up(*m->context_, one_row, m->max_batch_));
  }
  return m;
}

DeviceKind CtcModel::device() const {
  return engine_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> CtcModel::open_stream(const StreamOptions& options,
                                                              const ResolvedDecoding& decoding) {
  VOXRT_ASSIGN_OR_RETURN(
      CtcSearch search,
      CtcSearch::create({vocabulary_, time_base_, lm_, lexicon_}, options, decoding));
  VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
  return std::unique_ptr<FamilyStream>(
      std::make_unique<CtcStream>(shared_from_this(), slot, std::move(search)));
}

Status CtcModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  const auto batch_size = static_cast<std::int64_t>(batch.size());
  Tensor features = Tensor::uninitialized(DType::kF32, {batch_size, frames, feature_dim_});
  const std::size_t chunk_values = static_cast<std::size_t>(frames) * feature_dim_;
  std::vector<int> slots;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    std::copy(batch[b].features, batch[b].features + chunk_values,
              features.data<float>() + b * chunk_values);
    slots.push_back(static_cast<CtcStream*>(batch[b].stream)->slot());
  }
  std::vector<Tensor> inputs(length_input_ >= 0 ? 2 : 1);
  inputs[features_input_] = std::move(features);
  if (length_input_ >= 0) {
    // The frames of each row's chunk that hold audio (the rest pad a stream's last chunk).
    std::vector<std::int64_t> lengths;
    for (const ChunkInput& c : batch) lengths.push_back(std::min(c.valid_frames, frames));
    inputs[length_input_] = Tensor::from_vector<std::int64_t>({batch_size}, lengths);
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, pool_->run_batch(*context_, slots, inputs));
  const Tensor& log_probs = outputs[0];
  if (log_probs.rank() != 3 || log_probs.dim(0) != batch_size || log_probs.dim(2) != vocab_size()) {
    return invalid_argument("log_probs is ", dims_to_string(log_probs.dims()), ", expected [",
                            batch_size, ", T, ", vocab_size(), "]");
  }
  const auto out_frames = static_cast<int>(log_probs.dim(1));
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const int valid = std::min(out_frames, batch[b].valid_output_frames);
    VOXRT_RETURN_IF_ERROR(
        static_cast<CtcStream*>(batch[b].stream)
            ->accept(log_probs.data<float>() + b * out_frames * vocab_size(), valid));
  }
  return Status::ok();
}

}  // namespace voxrt::stream
