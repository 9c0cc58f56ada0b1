#include "stream/encoder_decoder/encoder_decoder_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "audio/whisper_log_mel.h"
#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
namespace fs = std::filesystem;
namespace {

int index_of(const std::vector<TensorInfo>& infos, const std::string& name) {
  for (std::size_t i = 0; i < infos.size(); ++i) {
    if (infos[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

std::string names_of(const std::vector<TensorInfo>& infos) {
  std::string out;
  for (const auto& info : infos) out += (out.empty() ? "" : ", ") + info.name;
  return out;
}

// Rows `rows` of `t` (batch on dim 0), in that order.
Tensor gather_rows(const Tensor& t, const std::vector<int>& rows) {
  Dims dims = t.dims();
  const std::size_t row_bytes =
      static_cast<std::size_t>(t.element_count() / dims[0]) * dtype_size_bytes(t.dtype());
  dims[0] = static_cast<std::int64_t>(rows.size());
  Tensor out = Tensor::uninitialized(t.dtype(), dims);
  auto* dst = static_cast<std::uint8_t*>(out.raw_data());
  const auto* src = static_cast<const std::uint8_t*>(t.raw_data());
  for (std::size_t r = 0; r < rows.size(); ++r)
    std::memcpy(dst + r * row_bytes, src + static_cast<std::size_t>(rows[r]) * row_bytes,
                row_bytes);
  return out;
}

Status expect_logits(const Tensor& logits, std::int64_t rows, std::int64_t positions, int vocab,
                     const char* engine) {
  if (logits.rank() == 3 && logits.dim(0) == rows && logits.dim(1) == positions &&
      logits.dim(2) == vocab)
    return Status::ok();
  return invalid_argument(engine, ": logits are ", dims_to_string(logits.dims()), ", expected [",
                          rows, ", ", positions, ", ", vocab, "]");
}

}  // namespace

// ---- one stream ---------------------------------------------------------------------------

class EncoderDecoderStream final : public FamilyStream {
 public:
  explicit EncoderDecoderStream(std::shared_ptr<EncoderDecoderModel> model)
      : model_(std::move(model)) {
    ++model_->streams_open_;
  }
  ~EncoderDecoderStream() override { --model_->streams_open_; }

  // A window the VAD found silent (or before the wake word): no text, only time.
  Status accept_skipped_frames(int output_frames) override {
    frames_ += output_frames;
    return Status::ok();
  }
  // No endpoint rule fires inside a stream: windows are fixed 30 s pieces, not utterances, and
  // their tokens have no frame times the trailing-silence rules could read.
  DecoderProgress progress() const override { return {}; }
  decode::DecodingResult partial() const override { return result(false); }
  decode::DecodingResult finalize() override { return result(true); }
  void reset_utterance() override {
    tokens_.clear();
    text_.clear();
  }
  Status reset_state() override { return Status::ok(); }

  // Appends the next window (`frames` frames of audio): its search, or null when it was not
  // decoded (too little audio).
  Status add_window(const WindowSearch* search, int frames) {
    if (search != nullptr && !search->is_silence()) {
      for (int id : search->text_tokens()) {
        tokens_.push_back(decode::TokenSpan{id, frames_, frames_ + frames - 1, 0.0f});
      }
      VOXRT_ASSIGN_OR_RETURN(std::string text, model_->tokenizer_->decode(search->text_tokens()));
      text_ += text;
    }
    frames_ += frames;
    return Status::ok();
  }

 private:
  decode::DecodingResult result(bool is_final) const {
    decode::DecodingResult r;
    // Whisper's text tokens carry their leading space; the stream's text does not.
    const auto first = text_.find_first_not_of(' ');
    const auto last = text_.find_last_not_of(' ');
    r.text = first == std::string::npos ? "" : text_.substr(first, last - first + 1);
    r.tokens = tokens_;
    r.is_final = is_final;
    return r;
  }

  std::shared_ptr<EncoderDecoderModel> model_;
  long long frames_ = 0;
  std::vector<decode::TokenSpan> tokens_;
  std::string text_;
};

// ---- the model ----------------------------------------------------------------------------

Expected<std::shared_ptr<EncoderDecoderModel>> EncoderDecoderModel::create(
    const BundleManifest& manifest, const std::string& folder, const RecognizerConfig& config) {
  auto m = std::shared_ptr<EncoderDecoderModel>(new EncoderDecoderModel());
  const std::string where = folder + "/" + BundleManifest::kFileName;
  if (!config.lm_path.empty()) {
    return unsupported(where, ": an LM (", config.lm_path,
                       ") is not supported with encoder_decoder models");
  }
  m->metadata_ = manifest.metadata;
  VOXRT_ASSIGN_OR_RETURN(m->contract_, EncoderDecoderContract::from_metadata(m->metadata_, where));
  const EncoderDecoderContract& c = m->contract_;
  m->feature_config_ = audio::whisper_feature_config(c.mel_bins);
  m->layout_.chunk_frames = audio::kWhisperWindowFrames;
  m->layout_.shift_frames = audio::kWhisperWindowFrames;
  m->layout_.min_chunk_frames = audio::kWhisperWindowFrames;
  m->layout_.subsampling = 1;
  m->layout_.pad_frame.assign(static_cast<std::size_t>(c.mel_bins), audio::kWhisperSilenceLogMel);
  m->time_base_.subsampling = 1;
  m->time_base_.frame_shift_ms = m->feature_config_.frame_shift_ms;

  const std::string vocab_path = (fs::path(folder) / c.vocab_file).string();
  const std::string added_path =
      c.added_tokens_file.empty() ? "" : (fs::path(folder) / c.added_tokens_file).string();
  VOXRT_ASSIGN_OR_RETURN(auto tokenizer,
                         decode::ByteLevelBpeDecoder::from_files(vocab_path, added_path));
  if (tokenizer.size() > c.vocab_size) {
    return invalid_argument(vocab_path, ": ", tokenizer.size(), " token ids, but ", where,
                            " says vocab_size ", c.vocab_size);
  }
  std::vector<std::string> pieces(static_cast<std::size_t>(c.vocab_size));
  // Ids past the tokenizer's (a model's vocabulary padded) have no text: never chosen.
  std::vector<std::uint8_t> special(static_cast<std::size_t>(c.vocab_size), 1);
  for (int id = 0; id < tokenizer.size(); ++id) {
    pieces[static_cast<std::size_t>(id)] = tokenizer.token(id);
    special[static_cast<std::size_t>(id)] = tokenizer.is_special(id) ? 1 : 0;
  }
  m->tokenizer_ = std::make_shared<const decode::ByteLevelBpeDecoder>(std::move(tokenizer));
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::pieces(std::move(pieces), c.eos_id));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  m->rules_ = std::make_shared<const WindowRules>(WindowRules::create(c, special));

  VOXRT_ASSIGN_OR_RETURN(std::string encoder_path, manifest.engine_path(folder, "encoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string decoder_path, manifest.engine_path(folder, "decoder"));
  VOXRT_ASSIGN_OR_RETURN(std::string step_path, manifest.engine_path(folder, "decoder_with_past"));
  VOXRT_ASSIGN_OR_RETURN(m->encoder_, Engine::load_file(encoder_path));
  VOXRT_ASSIGN_OR_RETURN(m->decoder_, Engine::load_file(decoder_path));
  VOXRT_ASSIGN_OR_RETURN(m->decoder_with_past_, Engine::load_file(step_path));
  const DeviceKind device = m->device();
  if (m->decoder_->impl().contents.target.device != device ||
      m->decoder_with_past_->impl().contents.target.device != device) {
    return invalid_argument(where,
                            ": the encoder and decoder engines were built for different "
                            "devices; rebuild the bundle with one --device");
  }
  if (m->encoder_->inputs().size() != 1 || m->encoder_->outputs().size() != 1) {
    return invalid_argument(encoder_path, ": expected one input (input_features) and one output ",
                            "(last_hidden_state); it takes (", names_of(m->encoder_->inputs()),
                            ")");
  }
  const auto& decoder_inputs = m->decoder_->inputs();
  if (decoder_inputs.size() != 2 || index_of(decoder_inputs, "input_ids") < 0 ||
      index_of(decoder_inputs, "encoder_hidden_states") < 0) {
    return invalid_argument(decoder_path,
                            ": expected the inputs (input_ids, encoder_hidden_states), found (",
                            names_of(decoder_inputs), ")");
  }
  m->decoder_logits_ = index_of(m->decoder_->outputs(), "logits");
  m->step_logits_ = index_of(m->decoder_with_past_->outputs(), "logits");
  m->step_ids_input_ = index_of(m->decoder_with_past_->inputs(), "input_ids");
  if (m->decoder_logits_ < 0 || m->step_logits_ < 0 || m->step_ids_input_ < 0) {
    return invalid_argument(where, ": the decoder engines need output 'logits' and input ",
                            "'input_ids'; the decoder gives (", names_of(m->decoder_->outputs()),
                            "), the step takes (", names_of(m->decoder_with_past_->inputs()), ")");
  }
  const auto& step_inputs = m->decoder_with_past_->inputs();
  for (std::size_t i = 0; i < step_inputs.size(); ++i) {
    const std::string& input = step_inputs[i].name;
    if (static_cast<int>(i) == m->step_ids_input_) continue;
    const std::string prefix = "past_key_values.";
    if (!input.starts_with(prefix)) {
      return invalid_argument(step_path, ": input '", input,
                              "' is neither input_ids nor past_key_values.N.*");
    }
    const std::string present = "present." + input.substr(prefix.size());
    PastSource source;
    source.step_input = static_cast<int>(i);
    source.decoder_output = index_of(m->decoder_->outputs(), present);
    const bool self_attention = input.find(".decoder.") != std::string::npos;
    if (self_attention) source.step_output = index_of(m->decoder_with_past_->outputs(), present);
    if (source.decoder_output < 0 || (self_attention && source.step_output < 0)) {
      return invalid_argument(where, ": '", input, "' needs '", present, "' from the decoder",
                              self_attention ? " and the step" : "", "; the decoder gives (",
                              names_of(m->decoder_->outputs()), ")");
    }
    m->past_.push_back(source);
  }
  if (static_cast<int>(m->past_.size()) != 4 * c.decoder_layers) {
    return invalid_argument(step_path, ": ", m->past_.size(), " past inputs, expected 4 x ",
                            c.decoder_layers, " decoder layers");
  }
  VOXRT_ASSIGN_OR_RETURN(m->encoder_context_, m->encoder_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->decoder_context_, m->decoder_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(m->step_context_, m->decoder_with_past_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(
      m->max_batch_,
      resolve_max_batch(*m->encoder_, m->encoder_->inputs()[0].name, config.max_batch,
                        RecognizerConfig::kDefaultMaxBatch, encoder_path));
  m->max_streams_ = config.max_streams;
  return m;
}

DeviceKind EncoderDecoderModel::device() const {
  return encoder_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> EncoderDecoderModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  if (!options.hotwords.empty())
    return unsupported("stream: hotwords are not supported with encoder_decoder models");
  if (decoding.decoder == DecoderKind::kBeam) {
    return unsupported(
        "stream: beam search is not done for encoder_decoder models yet; use greedy");
  }
  if (streams_open_ >= max_streams_) {
    return resource_exhausted("encoder_decoder: ", max_streams_,
                              " streams are open (RecognizerConfig::max_streams)");
  }
  return std::unique_ptr<FamilyStream>(std::make_unique<EncoderDecoderStream>(shared_from_this()));
}

Status EncoderDecoderModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  if (frames != audio::kWhisperWindowFrames) {
    return invalid_argument("encoder_decoder: a window is ", audio::kWhisperWindowFrames,
                            " frames, the driver gave ", frames);
  }
  // A window with under kMinWindowAudioFrames frames of audio is not decoded: it can only be the
  // tail of a stream whose audio ends within 12.5 ms after a window boundary (those frames reach
  // over it), and decoding a window of near silence gives text that was never said.
  std::vector<std::size_t> decoded;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    if (batch[b].valid_output_frames >= kMinWindowAudioFrames) decoded.push_back(b);
  }
  std::vector<WindowSearch> searches(decoded.size(), WindowSearch(rules_));
  if (!decoded.empty()) {
    const auto rows = static_cast<std::int64_t>(decoded.size());
    const int mels = contract_.mel_bins;
    const std::size_t window_values = static_cast<std::size_t>(frames) * mels;
    // [frames, mels] per stream -> normalised -> [rows, mels, frames] (input_features).
    Tensor features = Tensor::uninitialized(DType::kF32, {rows, mels, frames});
    std::vector<float> window(window_values);
    for (std::size_t r = 0; r < decoded.size(); ++r) {
      const float* in = batch[decoded[r]].features;
      std::copy(in, in + window_values, window.begin());
      audio::normalise_whisper_window(window);
      float* out = features.data<float>() + r * window_values;
      for (int t = 0; t < frames; ++t) {
        for (int m = 0; m < mels; ++m)
          out[static_cast<std::size_t>(m) * frames + t] =
              window[static_cast<std::size_t>(t) * mels + m];
      }
    }
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> encoded,
                           encoder_context_->run(std::span<const Tensor>(&features, 1)));
    ++calls_.encoder;
    if (encoded[0].rank() != 3 || encoded[0].dim(0) != rows) {
      return invalid_argument("encoder: last_hidden_state is ", dims_to_string(encoded[0].dims()),
                              ", expected [", rows, ", S, d]");
    }
    VOXRT_RETURN_IF_ERROR(decode_windows(encoded[0], searches));
  }
  std::size_t next = 0;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    auto* stream = static_cast<EncoderDecoderStream*>(batch[b].stream);
    const bool was_decoded = next < decoded.size() && decoded[next] == b;
    VOXRT_RETURN_IF_ERROR(
        stream->add_window(was_decoded ? &searches[next] : nullptr, batch[b].valid_output_frames));
    if (was_decoded) ++next;
  }
  return Status::ok();
}

Status EncoderDecoderModel::decode_windows(const Tensor& hidden,
                                           std::vector<WindowSearch>& searches) {
  const int vocab = contract_.vocab_size;
  const auto rows = static_cast<std::int64_t>(searches.size());
  const auto prompt_length = static_cast<std::int64_t>(contract_.prompt.size());
  // ---- the prompt: decoder_model ----
  std::vector<Tensor> inputs(2);
  Tensor ids = Tensor::uninitialized(DType::kI64, {rows, prompt_length});
  for (std::int64_t r = 0; r < rows; ++r) {
    for (std::int64_t p = 0; p < prompt_length; ++p)
      ids.data<std::int64_t>()[r * prompt_length + p] =
          contract_.prompt[static_cast<std::size_t>(p)];
  }
  const int ids_at = index_of(decoder_->inputs(), "input_ids");
  inputs[static_cast<std::size_t>(ids_at)] = std::move(ids);
  inputs[static_cast<std::size_t>(1 - ids_at)] = hidden;
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, decoder_context_->run(inputs));
  ++calls_.decoder;
  const Tensor& prompt_logits = outputs[static_cast<std::size_t>(decoder_logits_)];
  VOXRT_RETURN_IF_ERROR(expect_logits(prompt_logits, rows, prompt_length, vocab, "decoder"));
  std::vector<float> logits(static_cast<std::size_t>(vocab));
  // Rows still decoding (indices into `searches`), and the step engine's inputs for them.
  std::vector<int> active;
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = prompt_logits.data<float>() + r * prompt_length * vocab;
    searches[static_cast<std::size_t>(r)].observe_first_position(row);
    std::copy(row + (prompt_length - 1) * vocab, row + prompt_length * vocab, logits.begin());
    if (searches[static_cast<std::size_t>(r)].accept_logits(logits.data()))
      active.push_back(static_cast<int>(r));
  }
  std::vector<Tensor> step_inputs(decoder_with_past_->inputs().size());
  for (const PastSource& source : past_) {
    step_inputs[static_cast<std::size_t>(source.step_input)] =
        gather_rows(outputs[static_cast<std::size_t>(source.decoder_output)], active);
  }
  // ---- one token per step: decoder_with_past, the past kept between steps ----
  while (!active.empty()) {
    const auto n = static_cast<std::int64_t>(active.size());
    Tensor step_ids = Tensor::uninitialized(DType::kI64, {n, 1});
    for (std::int64_t i = 0; i < n; ++i)
      step_ids.data<std::int64_t>()[i] = searches[static_cast<std::size_t>(active[i])].last_token();
    step_inputs[static_cast<std::size_t>(step_ids_input_)] = std::move(step_ids);
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> step_out, step_context_->run(step_inputs));
    ++calls_.decoder_with_past;
    const Tensor& step_logits = step_out[static_cast<std::size_t>(step_logits_)];
    VOXRT_RETURN_IF_ERROR(expect_logits(step_logits, n, 1, vocab, "decoder_with_past"));
    std::vector<int> kept;  // positions in `active` that go on
    std::vector<int> still_active;
    for (std::int64_t i = 0; i < n; ++i) {
      const float* row = step_logits.data<float>() + i * vocab;
      std::copy(row, row + vocab, logits.begin());
      if (searches[static_cast<std::size_t>(active[i])].accept_logits(logits.data())) {
        kept.push_back(static_cast<int>(i));
        still_active.push_back(active[i]);
      }
    }
    const bool all_kept = kept.size() == active.size();
    for (const PastSource& source : past_) {
      Tensor& past = step_inputs[static_cast<std::size_t>(source.step_input)];
      if (source.step_output >= 0)
        past = std::move(step_out[static_cast<std::size_t>(source.step_output)]);
      if (!all_kept) past = gather_rows(past, kept);
    }
    active = std::move(still_active);
  }
  return Status::ok();
}

}  // namespace voxrt::stream
