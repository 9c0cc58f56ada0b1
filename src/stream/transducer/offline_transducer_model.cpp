#include "stream/transducer/offline_transducer_model.h"

#include <algorithm>

#include "decode/stateful_transducer_beam.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"
#include "stream/transducer/search_stream.h"
#include "stream/transducer/stateful_search_batch.h"

namespace voxrt::stream {
using GreedyStream = SearchStream<decode::StatefulTransducerStreamSearch>;
using BeamStream = SearchStream<decode::StatefulTransducerBeamSearch>;

Expected<std::shared_ptr<OfflineTransducerModel>> OfflineTransducerModel::create(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  auto m = std::shared_ptr<OfflineTransducerModel>(new OfflineTransducerModel());
  VOXRT_ASSIGN_OR_RETURN(PredictionEngines prediction, m->load_bundle(manifest, folder, config));
  const auto& metadata = m->metadata_;
  const std::string& where = m->where_;
  const std::string& encoder_path = m->encoder_path_;
  VOXRT_ASSIGN_OR_RETURN(auto segments, OfflineSegmentFrontEnd::create(metadata, where));
  m->segments_.emplace(std::move(segments));
  VOXRT_RETURN_IF_ERROR(
      m->load_time_base(m->segments_->layout().subsampling, m->feature_config().frame_shift_ms));
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
                        std::move(prediction.decoder), std::move(prediction.joiner), metadata,
                        m->vocabulary_->size(), m->vocabulary_->blank_id(), config.threads, where));
  VOXRT_ASSIGN_OR_RETURN(m->max_symbols_, max_symbols_per_frame(metadata, 10, config, where));
  VOXRT_RETURN_IF_ERROR(m->resolve_batch(features, config));
  m->max_streams_ = config.max_streams;
  return m;
}

Expected<std::unique_ptr<FamilyStream>> OfflineTransducerModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  if (streams_open_.load() >= max_streams_) {
    return resource_exhausted("transducer_offline: ", streams_open_.load(),
                              " streams are open, the most the recognizer's max_streams allows");
  }
  VOXRT_RETURN_IF_ERROR(decoding.transducer.validate());
  // Hotwords work in both searches (the greedy one lets a unit that extends a phrase compete
  // with its bonus).
  VOXRT_ASSIGN_OR_RETURN(auto hotwords, hotword_graph(options, decoding));
  if (decoding.decoder == DecoderKind::kBeam) {
    // RNN-T models get modified beam search, TDT models (durations) the TDT beam search
    // (decode/stateful_tdt_beam.h), whose frame rules use max_symbols_per_frame.
    decode::StatefulTransducerBeamSearch search(vocabulary_, time_base_,
                                                decoding.transducer.beam_width, max_symbols_,
                                                networks_->state_size(), std::move(hotwords));
    return std::unique_ptr<FamilyStream>(std::make_unique<BeamStream>(
        ModelLease::counted(shared_from_this(), streams_open_), std::move(search)));
  }
  decode::StatefulTransducerStreamSearch search(vocabulary_, time_base_, max_symbols_,
                                                networks_->state_size(), std::move(hotwords));
  return std::unique_ptr<FamilyStream>(std::make_unique<GreedyStream>(
      ModelLease::counted(shared_from_this(), streams_open_), std::move(search)));
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
    search_rows.push_back(
        stateful_search_row(*batch[b].stream, frames_first.data() + b * stream_values, valid));
  }
  return run_stateful_searches(*networks_, search_rows, out_frames);
}

}  // namespace voxrt::stream
