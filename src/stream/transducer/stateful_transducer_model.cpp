#include "stream/transducer/stateful_transducer_model.h"

#include <algorithm>

#include "decode/context_graph.h"
#include "decode/stateful_transducer_beam.h"
#include "decode/stateful_transducer_search.h"
#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"
#include "stream/transducer/stateful_search_batch.h"

namespace voxrt::stream {

// A stream with its state slot and one of the two searches (greedy or modified beam), which
// share these methods.
template <class Search>
class StatefulTransducerStream final : public FamilyStream {
 public:
  StatefulTransducerStream(std::shared_ptr<StatefulTransducerModel> model, int slot, Search search)
      : model_(std::move(model)), slot_(slot), search_(std::move(search)) {}
  ~StatefulTransducerStream() override { (void)model_->pool_->release(slot_); }

  Status accept_skipped_frames(int output_frames) override {
    search_.accept_skipped_frames(output_frames);
    return Status::ok();
  }
  DecoderProgress progress() const override {
    return {search_.utterance_frames(), search_.trailing_blank_frames(), search_.has_tokens()};
  }
  decode::DecodingResult partial() const override { return search_.partial(); }
  decode::DecodingResult finalize() override { return search_.finalize(); }
  void reset_utterance() override { search_.reset_utterance(); }
  // Fresh encoder states and a fresh prediction state: the next utterance is decoded as if it
  // had been cut out of the stream.
  Status reset_state() override {
    search_.reset_state();
    return model_->pool_->reset(slot_);
  }
  int slot() const { return slot_; }
  Search& search() { return search_; }

 private:
  std::shared_ptr<StatefulTransducerModel> model_;
  int slot_ = -1;
  Search search_;
};

using GreedyStream = StatefulTransducerStream<decode::StatefulTransducerStreamSearch>;
using BeamStream = StatefulTransducerStream<decode::StatefulTransducerBeamSearch>;

Expected<std::shared_ptr<StatefulTransducerModel>> StatefulTransducerModel::create(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  auto m = std::shared_ptr<StatefulTransducerModel>(new StatefulTransducerModel());
  m->metadata_ = manifest.metadata;
  const auto& metadata = m->metadata_;
  const std::string where = folder + "/" + BundleManifest::kFileName;
  if (!config.lm_path.empty())
    return unsupported(where, ": an LM with transducers is not supported (--lm)");
  VOXRT_ASSIGN_OR_RETURN(m->layout_.chunk_frames,
                         metadata_int(metadata, "voxrt.chunk_frames", 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(m->layout_.shift_frames,
                         metadata_int(metadata, "voxrt.shift_frames", 0, true, where));
  VOXRT_ASSIGN_OR_RETURN(m->layout_.subsampling,
                         metadata_int(metadata, "voxrt.subsampling", 0, true, where));
  if (m->layout_.shift_frames > m->layout_.chunk_frames ||
      m->layout_.shift_frames % m->layout_.subsampling != 0) {
    return invalid_argument(where, ": voxrt.shift_frames ", m->layout_.shift_frames,
                            " must be at most voxrt.chunk_frames ", m->layout_.chunk_frames,
                            " and a multiple of voxrt.subsampling ", m->layout_.subsampling);
  }
  // The encoder takes whole windows only (their length is fixed at export).
  m->layout_.min_chunk_frames = m->layout_.chunk_frames;
  VOXRT_ASSIGN_OR_RETURN(m->feature_config_, audio::FeatureConfig::from_metadata(metadata));
  m->feature_dim_ = m->feature_config_.output_dim();
  VOXRT_ASSIGN_OR_RETURN(m->layout_.pad_frame,
                         chunk_pad_frame(metadata, m->feature_config_, where));
  const std::string model_dir = config.model_dir.empty() ? folder : config.model_dir;
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  VOXRT_ASSIGN_OR_RETURN(m->time_base_,
                         time_base_from_metadata(metadata, m->layout_.subsampling,
                                                 m->feature_config_.frame_shift_ms, where));

  VOXRT_ASSIGN_OR_RETURN(std::string encoder_path, manifest.engine_path(folder, "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_path, manifest.engine_path(folder, "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_path, manifest.engine_path(folder, "joiner"));
  VOXRT_ASSIGN_OR_RETURN(m->encoder_, Engine::load_file(encoder_path));
  VOXRT_ASSIGN_OR_RETURN(auto decoder, Engine::load_file(decoder_path));
  VOXRT_ASSIGN_OR_RETURN(auto joiner, Engine::load_file(joiner_path));
  const DeviceKind device = m->encoder_->impl().contents.target.device;
  if (decoder->impl().contents.target.device != device ||
      joiner->impl().contents.target.device != device) {
    return invalid_argument(where,
                            ": the encoder, decoder and joiner engines were built for "
                            "different devices; rebuild the bundle with one --device");
  }
  VOXRT_ASSIGN_OR_RETURN(
      m->networks_, LstmTransducerNetworks::create(
                        std::move(decoder), std::move(joiner), metadata, m->vocabulary_->size(),
                        m->vocabulary_->blank_id(), config.threads, where));
  if (!m->networks_->durations().empty()) {
    return unsupported(where,
                       ": transducer_stateful runs RNN-T models; voxrt.transducer.durations ",
                       "names a TDT model");
  }
  VOXRT_ASSIGN_OR_RETURN(
      m->max_symbols_,
      metadata_int(metadata, "voxrt.transducer.max_symbols_per_frame", 3, false, where));
  if (m->max_symbols_ < 1 || m->max_symbols_ > 16) {
    return invalid_argument(where, ": voxrt.transducer.max_symbols_per_frame must be 1..16, found ",
                            m->max_symbols_);
  }
  if (config.transducer.max_symbols_per_frame > 0)
    m->max_symbols_ = config.transducer.max_symbols_per_frame;

  VOXRT_ASSIGN_OR_RETURN(m->encoder_context_, m->encoder_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->pool_, StatePool::create(m->encoder_, config.max_streams));
  const auto& inputs = m->pool_->stream_inputs();
  const std::string features_name =
      metadata_or(metadata, "voxrt.transducer.encoder_features_input", "input");
  m->features_input_ = index_of(inputs, features_name);
  const std::string lengths_name =
      metadata_or(metadata, "voxrt.transducer.encoder_lengths_input", "");
  if (!lengths_name.empty()) m->lengths_input_ = index_of(inputs, lengths_name);
  const std::size_t expected_inputs = lengths_name.empty() ? 1 : 2;
  if (m->features_input_ < 0 || inputs.size() != expected_inputs ||
      (!lengths_name.empty() && m->lengths_input_ < 0)) {
    return invalid_argument(encoder_path, ": the encoder's non-state inputs are (",
                            names_of(inputs), "), expected '", features_name, "'",
                            lengths_name.empty() ? "" : " and '" + lengths_name + "'",
                            " (voxrt.transducer.encoder_features_input / encoder_lengths_input); ",
                            "every other input must be a state paired with an output");
  }
  if (m->lengths_input_ >= 0) {
    m->lengths_dtype_ = inputs[static_cast<std::size_t>(m->lengths_input_)].dtype;
    if (m->lengths_dtype_ != DType::kI64 && m->lengths_dtype_ != DType::kI32) {
      return invalid_argument(encoder_path, ": '", lengths_name, "' must be int32 or int64, found ",
                              dtype_name(m->lengths_dtype_));
    }
  }
  const std::string output_name =
      metadata_or(metadata, "voxrt.transducer.encoder_output", "output");
  m->encoder_output_ = index_of(m->pool_->stream_outputs(), output_name);
  if (m->encoder_output_ < 0) {
    return invalid_argument(encoder_path, ": the encoder has no non-state output '", output_name,
                            "' (voxrt.transducer.encoder_output); its non-state outputs are: ",
                            names_of(m->pool_->stream_outputs()));
  }
  VOXRT_ASSIGN_OR_RETURN(m->max_batch_,
                         resolve_max_batch(*m->encoder_, features_name, config.max_batch,
                                           RecognizerConfig::kDefaultMaxBatch, encoder_path));
  return m;
}

DeviceKind StatefulTransducerModel::device() const {
  return encoder_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> StatefulTransducerModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  VOXRT_RETURN_IF_ERROR(decoding.transducer.validate());
  if (decoding.decoder == DecoderKind::kBeam) {
    // Hotwords come only with beam search (hotwords_need_beam_search: the driver refuses them
    // with greedy).
    std::shared_ptr<const decode::ContextGraph> hotwords;
    if (!options.hotwords.empty()) {
      VOXRT_ASSIGN_OR_RETURN(auto graph,
                             decode::ContextGraph::from_phrases(*vocabulary_, options.hotwords,
                                                                decoding.hotword_bonus));
      hotwords = std::make_shared<const decode::ContextGraph>(std::move(graph));
    }
    decode::StatefulTransducerBeamSearch search(vocabulary_, time_base_,
                                                decoding.transducer.beam_width,
                                                networks_->state_size(), std::move(hotwords));
    VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
    return std::unique_ptr<FamilyStream>(
        std::make_unique<BeamStream>(shared_from_this(), slot, std::move(search)));
  }
  decode::StatefulTransducerStreamSearch search(vocabulary_, time_base_, max_symbols_,
                                                networks_->state_size());
  VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
  return std::unique_ptr<FamilyStream>(
      std::make_unique<GreedyStream>(shared_from_this(), slot, std::move(search)));
}

Status StatefulTransducerModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  const auto batch_size = static_cast<std::int64_t>(batch.size());
  std::vector<Tensor> inputs(pool_->stream_inputs().size());
  Tensor& features = inputs[static_cast<std::size_t>(features_input_)];
  features = Tensor::uninitialized(DType::kF32, {batch_size, frames, feature_dim_});
  const std::size_t chunk_values = static_cast<std::size_t>(frames) * feature_dim_;
  std::vector<int> slots;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    std::copy(batch[b].features, batch[b].features + chunk_values,
              features.data<float>() + b * chunk_values);
    auto* greedy = dynamic_cast<GreedyStream*>(batch[b].stream);
    slots.push_back(greedy ? greedy->slot() : static_cast<BeamStream*>(batch[b].stream)->slot());
  }
  if (lengths_input_ >= 0) {
    // Every window is whole: a last chunk's padding is silence the model sees as audio (what the
    // exporter's fixed-length trace computes).
    Tensor lengths = Tensor::uninitialized(lengths_dtype_, {batch_size});
    for (std::int64_t b = 0; b < batch_size; ++b) {
      if (lengths_dtype_ == DType::kI32) {
        lengths.data<std::int32_t>()[b] = frames;
      } else {
        lengths.data<std::int64_t>()[b] = frames;
      }
    }
    inputs[static_cast<std::size_t>(lengths_input_)] = std::move(lengths);
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                         pool_->run_batch(*encoder_context_, slots, inputs));
  const Tensor& encoded = outputs[static_cast<std::size_t>(encoder_output_)];
  const int dim = networks_->encoder_dim();
  if (encoded.rank() != 3 || encoded.dim(0) != batch_size || encoded.dim(2) != dim) {
    return invalid_argument("transducer_stateful: the encoder output is ",
                            dims_to_string(encoded.dims()), ", expected [", batch_size, ", T, ",
                            dim, "]");
  }
  const auto out_frames = static_cast<int>(encoded.dim(1));
  // Greedy and beam streams may share a batch: each search runs on its own streams' frames.
  std::vector<StatefulSearchRow> search_rows;
  const std::size_t stream_values = static_cast<std::size_t>(out_frames) * dim;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const int valid = std::min(out_frames, batch[b].valid_output_frames);
    const float* rows_of_b = encoded.data<float>() + b * stream_values;
    StatefulSearchRow row{.frames = rows_of_b, .valid_frames = valid};
    if (auto* g = dynamic_cast<GreedyStream*>(batch[b].stream)) {
      row.greedy = &g->search();
    } else {
      row.beam = &static_cast<BeamStream*>(batch[b].stream)->search();
    }
    search_rows.push_back(row);
  }
  return run_stateful_searches(*networks_, search_rows, out_frames);
}

}  // namespace voxrt::stream
