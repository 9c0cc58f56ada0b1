#include "stream/transducer/stateful_transducer_model.h"

#include <algorithm>

#include "decode/stateful_transducer_beam.h"
#include "decode/stateful_transducer_search.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"
#include "stream/transducer/search_stream.h"
#include "stream/transducer/stateful_search_batch.h"

namespace voxrt::stream {

using GreedyStream = SearchStream<decode::StatefulTransducerStreamSearch>;
using BeamStream = SearchStream<decode::StatefulTransducerBeamSearch>;

Expected<std::shared_ptr<StatefulTransducerModel>> StatefulTransducerModel::create(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  auto m = std::shared_ptr<StatefulTransducerModel>(new StatefulTransducerModel());
  VOXRT_ASSIGN_OR_RETURN(PredictionEngines prediction, m->load_bundle(manifest, folder, config));
  const auto& metadata = m->metadata_;
  const std::string& where = m->where_;
  const std::string& encoder_path = m->encoder_path_;
  VOXRT_ASSIGN_OR_RETURN(m->front_end_, m->load_streaming_front_end());
  VOXRT_ASSIGN_OR_RETURN(
      m->networks_, LstmTransducerNetworks::create(
                        std::move(prediction.decoder), std::move(prediction.joiner), metadata,
                        m->vocabulary_->size(), m->vocabulary_->blank_id(), config.threads, where));
  if (!m->networks_->durations().empty()) {
    return unsupported(where,
                       ": transducer_stateful runs RNN-T models; voxrt.transducer.durations ",
                       "names a TDT model");
  }
  VOXRT_ASSIGN_OR_RETURN(m->max_symbols_, max_symbols_per_frame(metadata, 3, config, where));

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
  const std::string lengths_kind =
      metadata_or(metadata, "voxrt.transducer.encoder_lengths", "window");
  if (lengths_kind != "window" && lengths_kind != "audio") {
    return invalid_argument(where, ": voxrt.transducer.encoder_lengths '", lengths_kind,
                            "': expected window or audio");
  }
  m->lengths_count_audio_ = lengths_kind == "audio";
  if (m->lengths_count_audio_ &&
      m->front_end_.layout.chunk_frames != m->front_end_.layout.shift_frames) {
    // The frames a chunk holds and the frames it consumes differ with a lookahead.
    return invalid_argument(where, ": voxrt.transducer.encoder_lengths audio needs ",
                            "voxrt.shift_frames = voxrt.chunk_frames, found ",
                            m->front_end_.layout.shift_frames, " and ",
                            m->front_end_.layout.chunk_frames);
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
  VOXRT_RETURN_IF_ERROR(m->resolve_batch(features_name, config));
  return m;
}

Expected<std::unique_ptr<FamilyStream>> StatefulTransducerModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  VOXRT_RETURN_IF_ERROR(decoding.transducer.validate());
  // Hotwords work in both searches (the greedy one lets a unit that extends a phrase compete
  // with its bonus).
  VOXRT_ASSIGN_OR_RETURN(auto hotwords, hotword_graph(options, decoding));
  if (decoding.decoder == DecoderKind::kBeam) {
    decode::StatefulTransducerBeamSearch search(vocabulary_, time_base_,
                                                decoding.transducer.beam_width, max_symbols_,
                                                networks_->state_size(), std::move(hotwords));
    VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
    return std::unique_ptr<FamilyStream>(std::make_unique<BeamStream>(
        ModelLease::slot(shared_from_this(), *pool_, slot), std::move(search)));
  }
  decode::StatefulTransducerStreamSearch search(vocabulary_, time_base_, max_symbols_,
                                                networks_->state_size(), std::move(hotwords));
  VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
  return std::unique_ptr<FamilyStream>(std::make_unique<GreedyStream>(
      ModelLease::slot(shared_from_this(), *pool_, slot), std::move(search)));
}

Status StatefulTransducerModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  const auto batch_size = static_cast<std::int64_t>(batch.size());
  std::vector<Tensor> inputs(pool_->stream_inputs().size());
  inputs[static_cast<std::size_t>(features_input_)] =
      batch_features(batch, frames, front_end_.feature_dim);
  std::vector<int> slots;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    auto* greedy = dynamic_cast<GreedyStream*>(batch[b].stream);
    slots.push_back(greedy ? greedy->slot() : static_cast<BeamStream*>(batch[b].stream)->slot());
  }
  if (lengths_input_ >= 0) {
    // "window": every window is whole, a last chunk's padding is silence the model sees as
    // audio (what the Emformer exporter's fixed-length trace computes); "audio": the chunk's
    // frames that hold audio.
    Tensor lengths = Tensor::uninitialized(lengths_dtype_, {batch_size});
    for (std::int64_t b = 0; b < batch_size; ++b) {
      const int length = lengths_count_audio_
                             ? std::min(batch[static_cast<std::size_t>(b)].valid_frames, frames)
                             : frames;
      if (lengths_dtype_ == DType::kI32) {
        lengths.data<std::int32_t>()[b] = length;
      } else {
        lengths.data<std::int64_t>()[b] = length;
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
    search_rows.push_back(
        stateful_search_row(*batch[b].stream, encoded.data<float>() + b * stream_values, valid));
  }
  return run_stateful_searches(*networks_, search_rows, out_frames);
}

}  // namespace voxrt::stream
