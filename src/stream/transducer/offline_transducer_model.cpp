#include "stream/transducer/offline_transducer_model.h"

#include <algorithm>

#include "decode/stateful_transducer_beam.h"
#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"
#include "stream/transducer/stateful_search_batch.h"

namespace voxrt::stream {
// A stream with one of the two searches (greedy: StatefulTransducerStreamSearch; modified beam:
// StatefulTransducerBeamSearch), which share these methods.
template <class Search>
class OfflineTransducerStream final : public FamilyStream {
 public:
  OfflineTransducerStream(std::shared_ptr<OfflineTransducerModel> model, Search search)
      : model_(std::move(model)), search_(std::move(search)) {
    ++model_->streams_open_;
  }
  ~OfflineTransducerStream() override { --model_->streams_open_; }

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
  Status reset_state() override {
    search_.reset_state();
    return Status::ok();
  }
  Search& search() { return search_; }

 private:
  std::shared_ptr<OfflineTransducerModel> model_;
  Search search_;
};

using GreedyStream = OfflineTransducerStream<decode::StatefulTransducerStreamSearch>;
using BeamStream = OfflineTransducerStream<decode::StatefulTransducerBeamSearch>;

Expected<std::shared_ptr<OfflineTransducerModel>> OfflineTransducerModel::create(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  auto m = std::shared_ptr<OfflineTransducerModel>(new OfflineTransducerModel());
  m->metadata_ = manifest.metadata;
  const auto& metadata = m->metadata_;
  const std::string where = folder + "/" + BundleManifest::kFileName;
  VOXRT_ASSIGN_OR_RETURN(std::string encoder_path, manifest.engine_path(folder, "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_path, manifest.engine_path(folder, "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string joiner_path, manifest.engine_path(folder, "joiner"));
  VOXRT_ASSIGN_OR_RETURN(m->encoder_, Engine::load_file(encoder_path));
  VOXRT_ASSIGN_OR_RETURN(auto decoder, Engine::load_file(decoder_path));
  VOXRT_ASSIGN_OR_RETURN(auto joiner, Engine::load_file(joiner_path));
  VOXRT_ASSIGN_OR_RETURN(auto segments, OfflineSegmentFrontEnd::create(metadata, where));
  m->segments_.emplace(std::move(segments));
  const std::string model_dir = config.model_dir.empty() ? folder : config.model_dir;
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  VOXRT_ASSIGN_OR_RETURN(m->time_base_,
                         time_base_from_metadata(metadata, m->segments_->layout().subsampling,
                                                 m->feature_config().frame_shift_ms, where));
  VOXRT_ASSIGN_OR_RETURN(std::string features,
                         metadata_string(metadata, "voxrt.offline.features_input", where));
  VOXRT_ASSIGN_OR_RETURN(std::string length,
                         metadata_string(metadata, "voxrt.offline.length_input", where));
  VOXRT_ASSIGN_OR_RETURN(std::string output,
                         metadata_string(metadata, "voxrt.offline.output", where));
  m->features_input_ = index_of(m->encoder_->inputs(), features);
  m->length_input_ = index_of(m->encoder_->inputs(), length);
  m->output_ = index_of(m->encoder_->outputs(), output);
  if (m->encoder_->inputs().size() != 2 || m->features_input_ < 0 || m->length_input_ < 0 ||
      m->output_ < 0) {
    return invalid_argument(encoder_path, ": a transducer_offline encoder takes '", features,
                            "' and '", length, "' and gives '", output, "'; this one takes ",
                            names_of(m->encoder_->inputs()), " and gives ",
                            names_of(m->encoder_->outputs()));
  }
  if (m->encoder_->inputs()[static_cast<std::size_t>(m->length_input_)].dtype != DType::kI64) {
    return invalid_argument(encoder_path, ": '", length, "' must be int64 [N]");
  }
  VOXRT_ASSIGN_OR_RETURN(
      m->networks_, LstmTransducerNetworks::create(
                        std::move(decoder), std::move(joiner), metadata, m->vocabulary_->size(),
                        m->vocabulary_->blank_id(), config.threads, where));
  VOXRT_ASSIGN_OR_RETURN(
      m->max_symbols_,
      metadata_int(metadata, "voxrt.transducer.max_symbols_per_frame", 10, false, where));
  if (m->max_symbols_ < 1 || m->max_symbols_ > 16) {
    return invalid_argument(where, ": voxrt.transducer.max_symbols_per_frame must be 1..16, found ",
                            m->max_symbols_);
  }
  if (config.transducer.max_symbols_per_frame > 0)
    m->max_symbols_ = config.transducer.max_symbols_per_frame;
  if (!config.lm_path.empty())
    return unsupported(where, ": an LM with transducers is not supported (--lm)");
  VOXRT_ASSIGN_OR_RETURN(m->encoder_context_, m->encoder_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->max_batch_,
                         resolve_max_batch(*m->encoder_, features, config.max_batch,
                                           RecognizerConfig::kDefaultMaxBatch, encoder_path));
  m->max_streams_ = config.max_streams;
  return m;
}

DeviceKind OfflineTransducerModel::device() const {
  return encoder_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> OfflineTransducerModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  if (streams_open_.load() >= max_streams_) {
    return resource_exhausted("transducer_offline: ", streams_open_.load(),
                              " streams are open, the most the recognizer's max_streams allows");
  }
  if (decoding.decoder == DecoderKind::kBeam) {
    if (!networks_->durations().empty()) {
      return unsupported("transducer_offline: modified beam search is for RNN-T models; this is ",
                         "a TDT model (durations), searched greedily only");
    }
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
    return std::unique_ptr<FamilyStream>(
        std::make_unique<BeamStream>(shared_from_this(), std::move(search)));
  }
  decode::StatefulTransducerStreamSearch search(vocabulary_, time_base_, max_symbols_,
                                                networks_->state_size());
  return std::unique_ptr<FamilyStream>(
      std::make_unique<GreedyStream>(shared_from_this(), std::move(search)));
}

Status OfflineTransducerModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  VOXRT_ASSIGN_OR_RETURN(OfflineSegmentBatch segments, segments_->features(batch, frames));
  const auto rows = static_cast<std::int64_t>(batch.size());
  std::vector<Tensor> inputs(2);
  inputs[static_cast<std::size_t>(features_input_)] = std::move(segments.signal);
  inputs[static_cast<std::size_t>(length_input_)] =
      Tensor::from_vector<std::int64_t>({rows}, segments.lengths);
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, encoder_context_->run(inputs));
  const Tensor& encoded = outputs[static_cast<std::size_t>(output_)];
  const int dim = networks_->encoder_dim();
  if (encoded.rank() != 3 || encoded.dim(0) != rows || encoded.dim(1) != dim) {
    return invalid_argument("transducer_offline: the encoder output is ",
                            dims_to_string(encoded.dims()), ", expected [", rows, ", ", dim,
                            ", T] (NeMo's channels-first layout)");
  }
  // [N, D, T] -> [N, T, D]: the search reads one frame as a row.
  const auto out_frames = static_cast<int>(encoded.dim(2));
  std::vector<float> frames_first(static_cast<std::size_t>(rows) * out_frames * dim);
  const float* src = encoded.data<float>();
  for (std::int64_t b = 0; b < rows; ++b)
    for (int d = 0; d < dim; ++d)
      for (int t = 0; t < out_frames; ++t)
        frames_first[(static_cast<std::size_t>(b) * out_frames + t) * dim + d] =
            src[(static_cast<std::size_t>(b) * dim + d) * out_frames + t];
  // Greedy and beam streams may share a batch: each search runs on its own streams' frames.
  std::vector<StatefulSearchRow> search_rows;
  const std::size_t stream_values = static_cast<std::size_t>(out_frames) * dim;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const int valid =
        segments.lengths[b] == 0
            ? 0
            : std::min(out_frames, segments_->output_frames(static_cast<int>(segments.lengths[b])));
    const float* rows_of_b = frames_first.data() + b * stream_values;
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
