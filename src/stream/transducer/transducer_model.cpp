#include "stream/transducer/transducer_model.h"

#include <algorithm>
#include <chrono>

#include "stream/batch_limit.h"
#include "stream/engine_io_names.h"
#include "stream/model_metadata.h"
#include "stream/recognizer.h"
#include "stream/transducer/joiner_batches.h"
#include "stream/transducer/search_stream.h"

namespace voxrt::stream {

// ---- the decoder and joiner engines -----------------------------------------------------------

Expected<std::unique_ptr<EngineTransducerNetworks>> EngineTransducerNetworks::create(
    std::shared_ptr<const Engine> decoder, std::shared_ptr<const Engine> joiner,
    const std::map<std::string, std::string>& metadata, int blank_id, int threads,
    const std::string& where) {
  auto n = std::unique_ptr<EngineTransducerNetworks>(new EngineTransducerNetworks());
  n->decoder_ = std::move(decoder);
  n->joiner_ = std::move(joiner);
  n->blank_id_ = blank_id;
  VOXRT_ASSIGN_OR_RETURN(n->context_size_,
                         metadata_int(metadata, "voxrt.transducer.context_size", 0, true, where));
  if (n->decoder_->inputs().size() != 1 || n->decoder_->outputs().size() != 1 ||
      n->decoder_->inputs()[0].dtype != DType::kI64) {
    return invalid_argument(where, ": the decoder engine must take one int64 input [N, ",
                            n->context_size_, "] and give one output [N, dim]; it takes (",
                            names_of(n->decoder_->inputs()), ") and gives (",
                            names_of(n->decoder_->outputs()), ")");
  }
  if (n->joiner_->inputs().size() != 2 || n->joiner_->outputs().size() != 1) {
    return invalid_argument(where,
                            ": the joiner engine must take two inputs (encoder_out, "
                            "decoder_out) and give one output (logit); it takes (",
                            names_of(n->joiner_->inputs()), ")");
  }
  const std::string joiner_encoder =
      metadata_or(metadata, "voxrt.transducer.joiner_encoder_input", "encoder_out");
  const int encoder_at = index_of(n->joiner_->inputs(), joiner_encoder);
  if (encoder_at < 0) {
    return invalid_argument(where, ": the joiner has no input '", joiner_encoder,
                            "' (voxrt.transducer.joiner_encoder_input); it has ",
                            names_of(n->joiner_->inputs()));
  }
  n->joiner_encoder_first_ = encoder_at == 0;
  const auto& joiner_inputs = n->joiner_->inputs();
  n->encoder_dim_ =
      static_cast<int>(joiner_inputs[static_cast<std::size_t>(encoder_at)].dims.back());
  n->decoder_dim_ =
      static_cast<int>(joiner_inputs[static_cast<std::size_t>(1 - encoder_at)].dims.back());
  n->vocab_size_ = static_cast<int>(n->joiner_->outputs()[0].dims.back());
  if (n->encoder_dim_ <= 0 || n->decoder_dim_ <= 0 || n->vocab_size_ <= 0) {
    return invalid_argument(where, ": the joiner's input widths and vocabulary must be static; ",
                            "found encoder ", n->encoder_dim_, ", decoder ", n->decoder_dim_,
                            ", vocabulary ", n->vocab_size_);
  }
  // Rows per call: what the profiles admit (unbounded: pieces of 65536 rows).
  constexpr std::int64_t kUnboundedRows = 1 << 16;
  n->decoder_max_rows_ =
      largest_profile_batch(*n->decoder_, n->decoder_->inputs()[0].name).value_or(kUnboundedRows);
  n->joiner_max_rows_ =
      std::min(largest_profile_batch(*n->joiner_, joiner_inputs[0].name).value_or(kUnboundedRows),
               largest_profile_batch(*n->joiner_, joiner_inputs[1].name).value_or(kUnboundedRows));
  VOXRT_ASSIGN_OR_RETURN(n->decoder_context_, n->decoder_->create_context(threads));
  VOXRT_ASSIGN_OR_RETURN(n->joiner_context_, n->joiner_->create_context(threads));
  return n;
}

Status EngineTransducerNetworks::run_decoder(std::span<const std::int64_t> contexts, int rows,
                                             std::vector<float>& decoder_out) {
  decoder_out.clear();
  decoder_out.reserve(static_cast<std::size_t>(rows) * decoder_dim_);
  for (std::int64_t begin = 0; begin < rows; begin += decoder_max_rows_) {
    const std::int64_t n = std::min<std::int64_t>(decoder_max_rows_, rows - begin);
    Tensor y = Tensor::uninitialized(DType::kI64, {n, context_size_});
    std::copy(contexts.begin() + begin * context_size_,
              contexts.begin() + (begin + n) * context_size_, y.data<std::int64_t>());
    // icefall's decoder embeds -1 ("no unit yet") as zeros after clamping; so does ours.
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                           decoder_context_->run(std::span<const Tensor>(&y, 1)));
    ++decoder_calls_;
    const Tensor& d = out[0];
    if (d.element_count() != n * decoder_dim_) {
      return invalid_argument("transducer decoder output is ", dims_to_string(d.dims()),
                              ", expected [", n, ", ", decoder_dim_, "]");
    }
    decoder_out.insert(decoder_out.end(), d.data<float>(), d.data<float>() + d.element_count());
  }
  return Status::ok();
}

Status EngineTransducerNetworks::run_joiner(std::span<const float> encoder_frames,
                                            std::span<const float> decoder_out, int rows,
                                            std::vector<float>& logits) {
  const JoinerLayout layout{.encoder_dim = encoder_dim_,
                            .decoder_dim = decoder_dim_,
                            .logits_width = vocab_size_,
                            .max_rows = joiner_max_rows_,
                            .encoder_first = joiner_encoder_first_,
                            .unit_axis = JoinerLayout::UnitAxis::kNone};
  return run_joiner_in_batches(*joiner_context_, layout, encoder_frames, decoder_out, rows, logits,
                               joiner_calls_);
}

// ---- one stream ---------------------------------------------------------------------------

// The shared wrapper plus the feature frames the encoder has consumed (icefall's processed_lens,
// as sherpa-onnx counts them), which start again with the encoder's states.
class TransducerStream final : public SearchStream<decode::TransducerStreamSearch> {
 public:
  using SearchStream::SearchStream;
  Status reset_state() override {
    processed_frames_ = 0;
    return SearchStream::reset_state();
  }
  std::int64_t processed_frames_ = 0;
};

// ---- the model ----------------------------------------------------------------------------

Expected<std::shared_ptr<TransducerModel>> TransducerModel::create(const BundleManifest& manifest,
                                                                   const std::string& folder,
                                                                   const RecognizerConfig& config) {
  auto m = std::shared_ptr<TransducerModel>(new TransducerModel());
  VOXRT_ASSIGN_OR_RETURN(PredictionEngines prediction, m->load_bundle(manifest, folder, config));
  const auto& metadata = m->metadata_;
  const std::string& where = m->where_;
  const std::string& encoder_path = m->encoder_path_;
  VOXRT_ASSIGN_OR_RETURN(m->front_end_, m->load_streaming_front_end());
  VOXRT_ASSIGN_OR_RETURN(m->networks_,
                         EngineTransducerNetworks::create(
                             std::move(prediction.decoder), std::move(prediction.joiner), metadata,
                             m->vocabulary_->blank_id(), config.threads, where));
  if (m->networks_->vocab_size() != m->vocabulary_->size()) {
    return invalid_argument(where, ": the joiner gives ", m->networks_->vocab_size(),
                            " logits but the vocabulary has ", m->vocabulary_->size(), " units");
  }
  VOXRT_ASSIGN_OR_RETURN(m->pool_, StatePool::create(m->encoder_, config.max_streams));
  const auto& inputs = m->pool_->stream_inputs();
  const std::string features_name =
      metadata_or(metadata, "voxrt.transducer.encoder_features_input", "x");
  m->features_input_ = index_of(inputs, features_name);
  if (m->features_input_ < 0) {
    return invalid_argument(encoder_path, ": the encoder has no non-state input '", features_name,
                            "' (voxrt.transducer.encoder_features_input); its non-state inputs "
                            "are: ",
                            names_of(inputs));
  }
  const std::string processed =
      metadata_or(metadata, "voxrt.transducer.encoder_processed_input", "");
  if (!processed.empty()) m->processed_frames_input_ = index_of(inputs, processed);
  const std::size_t expected_inputs = processed.empty() ? 1 : 2;
  if (inputs.size() != expected_inputs || (!processed.empty() && m->processed_frames_input_ < 0)) {
    return invalid_argument(encoder_path, ": the encoder's non-state inputs are (",
                            names_of(inputs), "), expected '", features_name, "'",
                            processed.empty() ? "" : " and '" + processed + "'",
                            "; every other input must be a state paired with an output");
  }
  const std::string output_name =
      metadata_or(metadata, "voxrt.transducer.encoder_output", "encoder_out");
  m->encoder_output_ = index_of(m->pool_->stream_outputs(), output_name);
  if (m->encoder_output_ < 0) {
    return invalid_argument(encoder_path, ": the encoder has no non-state output '", output_name,
                            "'; its non-state outputs are: ", names_of(m->pool_->stream_outputs()));
  }
  VOXRT_RETURN_IF_ERROR(m->resolve_batch(features_name, config));
  if (m->pool_->states_on_device()) {
    // Every batch size the server will use gets its plan and CUDA graph now, not in the middle
    // of serving (StatePool::warm_up).
    std::vector<Tensor> one_row(inputs.size());
    one_row[static_cast<std::size_t>(m->features_input_)] = Tensor::zeros(
        DType::kF32, {1, m->front_end_.layout.chunk_frames, m->front_end_.feature_dim});
    if (m->processed_frames_input_ >= 0)
      one_row[static_cast<std::size_t>(m->processed_frames_input_)] =
          Tensor::zeros(DType::kI64, {1});
    VOXRT_RETURN_IF_ERROR(m->pool_->warm_up(*m->encoder_context_, one_row, m->max_batch_));
  }
  return m;
}

Expected<std::unique_ptr<FamilyStream>> TransducerModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  // A stream's beam width may be above what this search takes (1..64).
  VOXRT_RETURN_IF_ERROR(decoding.transducer.validate());
  VOXRT_ASSIGN_OR_RETURN(auto hotwords, hotword_graph(options, decoding));
  const auto kind = decoding.decoder == DecoderKind::kBeam
                        ? decode::TransducerSearchKind::kModifiedBeam
                        : decode::TransducerSearchKind::kGreedy;
  decode::TransducerStreamSearch search(vocabulary_, time_base_, kind, decoding.transducer,
                                        networks_->context_size(), std::move(hotwords));
  VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
  return std::unique_ptr<FamilyStream>(std::make_unique<TransducerStream>(
      ModelLease::slot(shared_from_this(), *pool_, slot), std::move(search)));
}

Status TransducerModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  const auto batch_size = static_cast<std::int64_t>(batch.size());
  std::vector<Tensor> inputs(pool_->stream_inputs().size());
  inputs[static_cast<std::size_t>(features_input_)] =
      batch_features(batch, frames, front_end_.feature_dim);
  std::vector<int> slots;
  std::vector<TransducerStream*> streams;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    streams.push_back(static_cast<TransducerStream*>(batch[b].stream));
    slots.push_back(streams.back()->slot());
  }
  if (processed_frames_input_ >= 0) {
    Tensor processed = Tensor::uninitialized(DType::kI64, {batch_size});
    for (std::size_t b = 0; b < batch.size(); ++b)
      processed.data<std::int64_t>()[b] = streams[b]->processed_frames_;
    inputs[static_cast<std::size_t>(processed_frames_input_)] = std::move(processed);
  }
  const auto start = std::chrono::steady_clock::now();
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                         pool_->run_batch(*encoder_context_, slots, inputs));
  const auto encoded = std::chrono::steady_clock::now();
  const Tensor& encoder_out = outputs[static_cast<std::size_t>(encoder_output_)];
  if (encoder_out.rank() != 3 || encoder_out.dim(0) != batch_size ||
      encoder_out.dim(2) != networks_->encoder_dim()) {
    return invalid_argument("encoder_out is ", dims_to_string(encoder_out.dims()), ", expected [",
                            batch_size, ", T, ", networks_->encoder_dim(), "]");
  }
  std::vector<decode::TransducerStreamSearch*> searches;
  std::vector<int> valid;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    searches.push_back(&streams[b]->search());
    valid.push_back(batch[b].valid_output_frames);
    streams[b]->processed_frames_ += front_end_.layout.shift_frames;
  }
  VOXRT_RETURN_IF_ERROR(
      decode::transducer_search_chunk(*networks_, searches, encoder_out.data<float>(),
                                      static_cast<int>(encoder_out.dim(1)), valid));
  const auto searched = std::chrono::steady_clock::now();
  timings_.encoder_seconds += std::chrono::duration<double>(encoded - start).count();
  timings_.search_seconds += std::chrono::duration<double>(searched - encoded).count();
  ++timings_.batches;
  return Status::ok();
}

}  // namespace voxrt::stream
