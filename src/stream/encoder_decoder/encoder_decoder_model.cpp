#include "stream/encoder_decoder/encoder_decoder_model.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <optional>
#include <tuple>

#include "audio/whisper_log_mel.h"
#include "decode/byte_level_bpe_encoder.h"
#include "runtime/engine_impl.h"
#include "stream/batch_limit.h"
#include "stream/encoder_decoder/token_sampling.h"
#include "stream/encoder_decoder/window_prompt.h"
#include "stream/engine_io_names.h"
#include "stream/recognizer.h"

namespace voxrt::stream {
namespace fs = std::filesystem;
namespace {

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

// Python's str.strip(): OpenAI strips the initial prompt before it adds its leading space.
std::string strip_spaces(const std::string& text) {
  const char* space = " \t\n\r\f\v";
  const auto first = text.find_first_not_of(space);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(space) - first + 1);
}

}  // namespace

// ---- one stream ---------------------------------------------------------------------------

class EncoderDecoderStream final : public FamilyStream {
 public:
  // `initial_prompt`: the BPE tokens of the stream's initial prompt; `fallback`: its
  // temperatures (the recognizer's, or the stream's own, WhisperStreamChoices).
  EncoderDecoderStream(std::shared_ptr<EncoderDecoderModel> model, bool timestamps, int beam_width,
                       std::vector<int> initial_prompt, FallbackPolicy fallback)
      : model_(std::move(model)),
        timestamps_(timestamps),
        beam_width_(beam_width),
        language_id_(model_->contract_.language_id),
        previous_(std::move(initial_prompt), model_->contract_.max_previous_tokens(),
                  model_->options_.condition_on_previous_text),
        fallback_(std::move(fallback)) {
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
  decode::DecodingResult partial() const override {
    decode::DecodingResult r = result(false);
    if (!filling_text_.empty()) r.text = trimmed(text_ + filling_text_);
    return r;
  }
  decode::DecodingResult finalize() override { return result(true); }
  // The previous text stays: it is the stream's context, as OpenAI keeps it over the whole
  // audio, not the utterance's.
  void reset_utterance() override {
    tokens_.clear();
    text_.clear();
    segments_.clear();
    filling_text_.clear();
  }
  Status reset_state() override { return Status::ok(); }

  bool timestamps() const { return timestamps_; }
  int beam_width() const { return beam_width_; }
  // A multilingual model without a fixed language, before the stream's first decoded window.
  bool needs_language() const { return language_id_ < 0 && model_->contract_.multilingual(); }
  void set_language(int id) { language_id_ = id; }
  // The next window's prompt: the previous text, the language and task, timestamps or not.
  std::vector<int> prompt() const { return prompt_in(language_id_); }
  // The same in language `language_id` (a partial decode's language, detected for it alone).
  std::vector<int> prompt_in(int language_id) const {
    return window_prompt(model_->contract_, model_->contract_.multilingual() ? language_id : -1,
                         model_->options_.task, timestamps_, previous_.tokens());
  }
  // What the window that is filling says so far (growing-window partials; empty: nothing).
  void set_filling_text(std::string text) { filling_text_ = std::move(text); }
  const FallbackPolicy& fallback() const { return fallback_; }
  // The sampling draws of the next window's attempt `attempt` (token_sampling.h).
  std::uint64_t sampling_key_for(int attempt) const {
    return sampling_key(model_->options_.fallback.seed, static_cast<std::uint64_t>(windows_),
                        static_cast<std::uint64_t>(attempt));
  }

  // Appends the next window (`frames` frames of audio): what it said, or null when it was not
  // decoded (too little audio).
  Status add_window(const WindowOutcome* outcome, int frames) {
    filling_text_.clear();
    if (outcome != nullptr) ++windows_;
    if (outcome != nullptr && !outcome->silence) {
      for (int id : outcome->tokens) {
        tokens_.push_back(decode::TokenSpan{id, frames_, frames_ + frames - 1, 0.0f});
      }
      VOXRT_ASSIGN_OR_RETURN(std::string text, model_->text_of(outcome->tokens));
      text_ += text;
      if (timestamps_) VOXRT_RETURN_IF_ERROR(add_segments(outcome->tokens, frames));
      previous_.add_window(outcome->tokens, outcome->temperature);
    }
    frames_ += frames;
    return Status::ok();
  }

 private:
  Expected<std::string> text_of(std::span<const int> tokens) const {
    return model_->text_of(tokens);
  }

  // The window's segments, in seconds from the stream's start; one with no text or no length is
  // left out (OpenAI clears those).
  Status add_segments(std::span<const int> tokens, int frames) {
    const double window_start_s = model_->time_base_.seconds(frames_);
    const TimestampRules& rules = *model_->timestamp_rules_->timestamps;
    for (const WindowSegment& segment :
         split_segments(tokens, rules, model_->time_base_.seconds(frames))) {
      VOXRT_ASSIGN_OR_RETURN(
          std::string text, text_of(tokens.subspan(static_cast<std::size_t>(segment.first_token),
                                                   static_cast<std::size_t>(segment.end_token -
                                                                            segment.first_token))));
      text = trimmed(text);
      if (text.empty() || segment.end_s <= segment.start_s) continue;
      segments_.push_back(
          {std::move(text), window_start_s + segment.start_s, window_start_s + segment.end_s});
    }
    return Status::ok();
  }

  // Whisper's text tokens carry their leading space; the stream's text does not.
  static std::string trimmed(const std::string& text) {
    const auto first = text.find_first_not_of(' ');
    const auto last = text.find_last_not_of(' ');
    return first == std::string::npos ? "" : text.substr(first, last - first + 1);
  }

  decode::DecodingResult result(bool is_final) const {
    decode::DecodingResult r;
    r.text = trimmed(text_);
    r.tokens = tokens_;
    r.segments = segments_;
    if (language_id_ >= 0) r.language = model_->contract_.language_code(language_id_);
    r.is_final = is_final;
    return r;
  }

  std::shared_ptr<EncoderDecoderModel> model_;
  bool timestamps_;
  int beam_width_;  // 0: greedy
  int language_id_;
  PreviousText previous_;
  FallbackPolicy fallback_;
  long long windows_ = 0;  // decoded windows so far (the sampling draws' window counter)
  long long frames_ = 0;
  std::vector<decode::TokenSpan> tokens_;
  std::string text_;
  std::vector<decode::SegmentResult> segments_;
  std::string filling_text_;
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
  m->options_ = config.encoder_decoder;
  VOXRT_RETURN_IF_ERROR(m->options_.validate());
  // The options' thresholds over the model's: the silence rule and the fallback read the same.
  const TemperatureFallbackConfig& fallback = m->options_.fallback;
  m->contract_.logprob_threshold =
      fallback.logprob_threshold.value_or(m->contract_.logprob_threshold);
  m->contract_.no_speech_threshold =
      fallback.no_speech_threshold.value_or(m->contract_.no_speech_threshold);
  const EncoderDecoderContract& c = m->contract_;
  if (m->options_.task == WhisperTask::kTranslate && (!c.multilingual() || c.translate_id < 0)) {
    return unsupported(where, ": the translate task needs a multilingual model with <|translate|>",
                       " (generation_config's task_to_id \"translate\"); this one is ",
                       c.multilingual() ? "multilingual without it" : "English-only");
  }
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
  // The BPE encoder for initial prompts (the recognizer's, and each stream's own): only models
  // with <|startofprev|> take one, and only folders with merges.txt can encode it.
  if (c.sot_prev_id >= 0 && !c.merges_file.empty()) {
    VOXRT_ASSIGN_OR_RETURN(auto encoder,
                           decode::ByteLevelBpeEncoder::from_files(
                               vocab_path, (fs::path(folder) / c.merges_file).string()));
    m->prompt_encoder_ = std::make_shared<const decode::ByteLevelBpeEncoder>(std::move(encoder));
  }
  VOXRT_ASSIGN_OR_RETURN(m->initial_prompt_tokens_,
                         m->encode_initial_prompt(m->options_.initial_prompt, where));
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::pieces(std::move(pieces), c.eos_id));
  m->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  m->rules_ = std::make_shared<const WindowRules>(WindowRules::create(c, special));
  if (c.timestamp_begin_id >= 0) {
    m->timestamp_rules_ =
        std::make_shared<const WindowRules>(WindowRules::create(c, special, true));
  }

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
  // Every beam row of every window in a step: as many as the step engine's profile admits.
  VOXRT_ASSIGN_OR_RETURN(
      m->max_step_rows_,
      resolve_max_batch(
          *m->decoder_with_past_,
          m->decoder_with_past_->inputs()[static_cast<std::size_t>(m->step_ids_input_)].name, 0,
          std::numeric_limits<int>::max(), step_path));
  m->max_streams_ = config.max_streams;
  return m;
}

Expected<std::vector<int>> EncoderDecoderModel::encode_initial_prompt(
    const std::string& prompt, const std::string& where) const {
  if (prompt.empty()) return std::vector<int>();
  if (contract_.sot_prev_id < 0) {
    return unsupported(where, ": an initial prompt needs <|startofprev|>, which the model (or a ",
                       "bundle built before voxrt read it) has not");
  }
  if (prompt_encoder_ == nullptr) {
    return unsupported(where, ": an initial prompt needs the BPE merges (merges.txt), which the ",
                       "model folder had not");
  }
  // OpenAI: tokenizer.encode(" " + initial_prompt.strip()).
  return prompt_encoder_->encode(" " + strip_spaces(prompt));
}

DeviceKind EncoderDecoderModel::device() const {
  return encoder_->impl().contents.target.device;
}

Expected<std::unique_ptr<FamilyStream>> EncoderDecoderModel::open_stream(
    const StreamOptions& options, const ResolvedDecoding& decoding) {
  if (!options.hotwords.empty())
    return unsupported("stream: hotwords are not supported with encoder_decoder models");
  // The decoding choices' beam_width (unset: the transducer's default, 4; OpenAI's command line
  // uses 5).
  const int beam_width =
      decoding.decoder == DecoderKind::kBeam ? decoding.transducer.beam_width : 0;
  if (beam_width > max_step_rows_) {
    return invalid_argument("stream: beam width ", beam_width, " is above the ", max_step_rows_,
                            " rows decoder_with_past takes in one call (rebuild with a larger "
                            "voxrt build --max-beam or --max-batch)");
  }
  if (decoding.timestamps && timestamp_rules_ == nullptr) {
    return unsupported(
        "stream: timestamps asked for, but the model has no timestamp tokens "
        "(no <|0.00|> in its tokenizer)");
  }
  if (streams_open_ >= max_streams_) {
    return resource_exhausted("encoder_decoder: ", max_streams_,
                              " streams are open (RecognizerConfig::max_streams)");
  }
  // The stream's own prompt and temperatures over the recognizer's.
  const EncoderDecoderOptions stream_options = options.whisper.over(options_);
  VOXRT_RETURN_IF_ERROR(stream_options.validate());
  std::vector<int> prompt_tokens = initial_prompt_tokens_;
  if (options.whisper.initial_prompt) {
    VOXRT_ASSIGN_OR_RETURN(prompt_tokens,
                           encode_initial_prompt(*options.whisper.initial_prompt, "stream"));
  }
  FallbackPolicy fallback(stream_options.fallback, contract_.logprob_threshold,
                          contract_.no_speech_threshold, contract_.no_speech_id >= 0);
  return std::unique_ptr<FamilyStream>(
      std::make_unique<EncoderDecoderStream>(shared_from_this(), decoding.timestamps, beam_width,
                                             std::move(prompt_tokens), std::move(fallback)));
}

Status EncoderDecoderModel::run_batch(std::span<const ChunkInput> batch, int frames) {
  if (frames != audio::kWhisperWindowFrames) {
    return invalid_argument("encoder_decoder: a window is ", audio::kWhisperWindowFrames,
                            " frames, the driver gave ", frames);
  }
  auto stream_of = [&](std::size_t b) {
    return static_cast<EncoderDecoderStream*>(batch[b].stream);
  };
  // A window with under kMinWindowAudioFrames frames of audio is not decoded: it can only be the
  // tail of a stream whose audio ends within 12.5 ms after a window boundary (those frames reach
  // over it), and decoding a window of near silence gives text that was never said.
  std::vector<int> decoded;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    if (batch[b].valid_output_frames >= kMinWindowAudioFrames)
      decoded.push_back(static_cast<int>(b));
  }
  std::vector<std::unique_ptr<WindowDecoding>> searches(decoded.size());
  // The temperature of each decoded window's last attempt (the result it keeps).
  std::vector<double> attempt_temperature(decoded.size(), 0.0);
  if (!decoded.empty()) {
    VOXRT_ASSIGN_OR_RETURN(const Tensor hidden, encode_windows(batch, decoded, frames));
    // The language of streams that have none yet, from this (their first decoded) window.
    std::vector<int> detect;
    for (std::size_t r = 0; r < decoded.size(); ++r) {
      if (stream_of(static_cast<std::size_t>(decoded[r]))->needs_language())
        detect.push_back(static_cast<int>(r));
    }
    if (!detect.empty()) {
      VOXRT_ASSIGN_OR_RETURN(std::vector<int> languages,
                             detect_languages(gather_rows(hidden, detect)));
      for (std::size_t i = 0; i < detect.size(); ++i)
        stream_of(static_cast<std::size_t>(decoded[static_cast<std::size_t>(detect[i])]))
            ->set_language(languages[i]);
    }
    // Each window's prompt (fixed over its attempts), then the attempts of the temperature
    // fallback: every window at the first temperature, those that fail the checks again at the
    // next, until none is left to retry.
    std::vector<EncoderDecoderStream*> streams;
    std::vector<std::vector<int>> prompts;
    for (int b : decoded) {
      streams.push_back(stream_of(static_cast<std::size_t>(b)));
      prompts.push_back(streams.back()->prompt());
    }
    std::vector<int> pending(decoded.size());
    for (std::size_t r = 0; r < pending.size(); ++r) pending[r] = static_cast<int>(r);
    for (int attempt = 0; !pending.empty(); ++attempt) {
      if (attempt > 0) calls_.fallback_decodings += static_cast<long long>(pending.size());
      VOXRT_RETURN_IF_ERROR(decode_attempt(hidden, pending, streams, prompts, attempt, searches));
      std::vector<int> retry;
      for (int r : pending) {
        const FallbackPolicy& fallback = streams[static_cast<std::size_t>(r)]->fallback();
        attempt_temperature[static_cast<std::size_t>(r)] = fallback.temperature(attempt);
        WindowOutcome outcome = searches[static_cast<std::size_t>(r)]->outcome();
        VOXRT_ASSIGN_OR_RETURN(std::string text, text_of(outcome.tokens));
        if (fallback.retry(attempt, outcome, text)) retry.push_back(r);
      }
      pending = std::move(retry);
    }
  }
  std::size_t next = 0;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const bool was_decoded = next < decoded.size() && decoded[next] == static_cast<int>(b);
    std::optional<WindowOutcome> outcome;
    if (was_decoded) {
      outcome = searches[next]->outcome();
      outcome->temperature = attempt_temperature[next];
    }
    VOXRT_RETURN_IF_ERROR(
        stream_of(b)->add_window(was_decoded ? &*outcome : nullptr, batch[b].valid_output_frames));
    if (was_decoded) ++next;
  }
  return Status::ok();
}

Expected<Tensor> EncoderDecoderModel::encode_windows(std::span<const ChunkInput> batch,
                                                     std::span<const int> window_rows, int frames) {
  const auto rows = static_cast<std::int64_t>(window_rows.size());
  const int mels = contract_.mel_bins;
  const std::size_t window_values = static_cast<std::size_t>(frames) * mels;
  // [frames, mels] per stream -> normalised -> [rows, mels, frames] (input_features).
  Tensor features = Tensor::uninitialized(DType::kF32, {rows, mels, frames});
  std::vector<float> window(window_values);
  for (std::size_t r = 0; r < window_rows.size(); ++r) {
    const float* in = batch[static_cast<std::size_t>(window_rows[r])].features;
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
  Tensor hidden = std::move(encoded[0]);
  if (hidden.rank() != 3 || hidden.dim(0) != rows) {
    return invalid_argument("encoder: last_hidden_state is ", dims_to_string(hidden.dims()),
                            ", expected [", rows, ", S, d]");
  }
  return hidden;
}

Status EncoderDecoderModel::run_partial_batch(std::span<const ChunkInput> batch, int frames) {
  if (frames != audio::kWhisperWindowFrames) {
    return invalid_argument("encoder_decoder: a window is ", audio::kWhisperWindowFrames,
                            " frames, the driver gave ", frames);
  }
  // As run_batch: too little audio to decode says nothing.
  std::vector<int> decoded;
  std::vector<EncoderDecoderStream*> streams;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    auto* s = static_cast<EncoderDecoderStream*>(batch[b].stream);
    if (batch[b].valid_output_frames >= kMinWindowAudioFrames) {
      decoded.push_back(static_cast<int>(b));
      streams.push_back(s);
    } else {
      s->set_filling_text("");
    }
  }
  if (decoded.empty()) return Status::ok();
  VOXRT_ASSIGN_OR_RETURN(const Tensor hidden, encode_windows(batch, decoded, frames));
  calls_.partial_windows += static_cast<long long>(decoded.size());
  std::vector<int> detect;
  for (std::size_t r = 0; r < streams.size(); ++r) {
    if (streams[r]->needs_language()) detect.push_back(static_cast<int>(r));
  }
  std::vector<int> languages(streams.size(), -1);
  if (!detect.empty()) {
    VOXRT_ASSIGN_OR_RETURN(std::vector<int> detected,
                           detect_languages(gather_rows(hidden, detect)));
    for (std::size_t i = 0; i < detect.size(); ++i)
      languages[static_cast<std::size_t>(detect[i])] = detected[i];
  }
  std::vector<std::vector<int>> prompts;
  std::vector<int> rows;
  for (std::size_t r = 0; r < streams.size(); ++r) {
    prompts.push_back(streams[r]->needs_language() ? streams[r]->prompt_in(languages[r])
                                                   : streams[r]->prompt());
    rows.push_back(static_cast<int>(r));
  }
  // The first attempt only: a partial is provisional, and its window is decoded whole (with
  // the fallback) when it is complete.
  std::vector<std::unique_ptr<WindowDecoding>> searches(streams.size());
  VOXRT_RETURN_IF_ERROR(decode_attempt(hidden, rows, streams, prompts, 0, searches));
  for (std::size_t r = 0; r < streams.size(); ++r) {
    const WindowOutcome outcome = searches[r]->outcome();
    if (outcome.silence) {
      streams[r]->set_filling_text("");
      continue;
    }
    VOXRT_ASSIGN_OR_RETURN(std::string text, text_of(outcome.tokens));
    streams[r]->set_filling_text(std::move(text));
  }
  return Status::ok();
}

Expected<std::string> EncoderDecoderModel::text_of(std::span<const int> tokens) const {
  const int timestamp_begin = contract_.timestamp_begin_id;
  std::vector<int> text_ids;
  for (int id : tokens) {
    if (timestamp_begin < 0 || id < timestamp_begin) text_ids.push_back(id);
  }
  return tokenizer_->decode(text_ids);
}

Status EncoderDecoderModel::decode_attempt(const Tensor& hidden, std::span<const int> rows,
                                           const std::vector<EncoderDecoderStream*>& streams,
                                           const std::vector<std::vector<int>>& prompts,
                                           int attempt,
                                           std::vector<std::unique_ptr<WindowDecoding>>& searches) {
  // Windows that decode alike share the decoder calls: the same temperature (a stream's own
  // temperatures may differ from its batch mates'), the same search (greedy, the beam width, or
  // sampling above temperature 0, where OpenAI samples instead of its beam search), the same
  // timestamps choice and prompt length, in groups of as many windows as the engines take (the
  // step engine: windows times beams rows).
  std::map<std::tuple<double, int, bool, std::size_t>, std::vector<int>> groups;
  for (int r : rows) {
    const EncoderDecoderStream* s = streams[static_cast<std::size_t>(r)];
    const double temperature = s->fallback().temperature(attempt);
    const int beam_width = temperature > 0.0 ? 0 : s->beam_width();
    groups[{temperature, beam_width, s->timestamps(), prompts[static_cast<std::size_t>(r)].size()}]
        .push_back(r);
  }
  for (const auto& [kind, members] : groups) {
    const double temperature = std::get<0>(kind);
    const int beam_width = std::get<1>(kind);
    const auto per_call = static_cast<std::size_t>(
        std::max(1, std::min(max_batch_, max_step_rows_ / std::max(1, beam_width))));
    for (std::size_t first = 0; first < members.size(); first += per_call) {
      const std::vector<int> part(members.begin() + static_cast<std::ptrdiff_t>(first),
                                  members.begin() + static_cast<std::ptrdiff_t>(std::min(
                                                        members.size(), first + per_call)));
      std::vector<std::vector<int>> part_prompts;
      std::vector<WindowDecoding*> part_searches;
      for (int r : part) {
        const EncoderDecoderStream* s = streams[static_cast<std::size_t>(r)];
        const std::vector<int>& prompt = prompts[static_cast<std::size_t>(r)];
        part_prompts.push_back(prompt);
        auto rules = s->timestamps() ? timestamp_rules_ : rules_;
        auto& search = searches[static_cast<std::size_t>(r)];
        if (temperature > 0.0) {
          search = std::make_unique<WindowSearch>(
              rules, prompt, WindowSampling{temperature, s->sampling_key_for(attempt)});
        } else if (beam_width > 0) {
          search = std::make_unique<WindowBeamSearch>(rules, prompt, beam_width);
        } else {
          search = std::make_unique<WindowSearch>(rules, prompt);
        }
        part_searches.push_back(search.get());
      }
      // `part` ascends without repeats: as many rows as `hidden` has is all of them, in order.
      const bool whole = static_cast<std::int64_t>(part.size()) == hidden.dim(0);
      VOXRT_RETURN_IF_ERROR(
          decode_windows(whole ? hidden : gather_rows(hidden, part), part_prompts, part_searches));
    }
  }
  return Status::ok();
}

Expected<std::vector<int>> EncoderDecoderModel::detect_languages(const Tensor& hidden) {
  const int vocab = contract_.vocab_size;
  const std::int64_t rows = hidden.dim(0);
  std::vector<Tensor> inputs(2);
  Tensor ids = Tensor::uninitialized(DType::kI64, {rows, 1});
  for (std::int64_t r = 0; r < rows; ++r) ids.data<std::int64_t>()[r] = contract_.sot_id;
  const int ids_at = index_of(decoder_->inputs(), "input_ids");
  inputs[static_cast<std::size_t>(ids_at)] = std::move(ids);
  inputs[static_cast<std::size_t>(1 - ids_at)] = hidden;
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, decoder_context_->run(inputs));
  ++calls_.language_detection;
  const Tensor& logits = outputs[static_cast<std::size_t>(decoder_logits_)];
  VOXRT_RETURN_IF_ERROR(expect_logits(logits, rows, 1, vocab, "decoder (language detection)"));
  std::vector<int> languages(static_cast<std::size_t>(rows), -1);
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = logits.data<float>() + r * vocab;
    int& best = languages[static_cast<std::size_t>(r)];
    for (const auto& language : contract_.languages) {
      // Ties: the lower id, as an argmax over the masked logits gives.
      if (best < 0 || row[language.id] > row[best] ||
          (row[language.id] == row[best] && language.id < best))
        best = language.id;
    }
  }
  return languages;
}

Status EncoderDecoderModel::decode_windows(const Tensor& hidden,
                                           const std::vector<std::vector<int>>& prompts,
                                           std::span<WindowDecoding* const> searches) {
  const int vocab = contract_.vocab_size;
  const auto windows = static_cast<std::int64_t>(searches.size());
  const auto prompt_length = static_cast<std::int64_t>(prompts[0].size());
  // ---- the prompt: decoder_model ----
  std::vector<Tensor> inputs(2);
  Tensor ids = Tensor::uninitialized(DType::kI64, {windows, prompt_length});
  for (std::int64_t w = 0; w < windows; ++w) {
    for (std::int64_t p = 0; p < prompt_length; ++p)
      ids.data<std::int64_t>()[w * prompt_length + p] =
          prompts[static_cast<std::size_t>(w)][static_cast<std::size_t>(p)];
  }
  const int ids_at = index_of(decoder_->inputs(), "input_ids");
  inputs[static_cast<std::size_t>(ids_at)] = std::move(ids);
  inputs[static_cast<std::size_t>(1 - ids_at)] = hidden;
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, decoder_context_->run(inputs));
  ++calls_.decoder;
  const Tensor& prompt_logits = outputs[static_cast<std::size_t>(decoder_logits_)];
  VOXRT_RETURN_IF_ERROR(expect_logits(prompt_logits, windows, prompt_length, vocab, "decoder"));
  // The rows of the next step: the window of each (a window's rows are adjacent), and the row of
  // the call before whose past each extends.
  std::vector<int> row_window;
  std::vector<int> sources;
  std::vector<int> local_sources;
  std::vector<float> logits;
  for (std::int64_t w = 0; w < windows; ++w) {
    const float* row = prompt_logits.data<float>() + w * prompt_length * vocab;
    WindowDecoding& search = *searches[static_cast<std::size_t>(w)];
    // P(no speech) is read at <|startoftranscript|>, after any previous text (OpenAI's
    // sot_index).
    search.observe_first_position(row + static_cast<std::int64_t>(start_of_transcript_index(
                                            contract_, prompts[static_cast<std::size_t>(w)])) *
                                            vocab);
    logits.assign(row + (prompt_length - 1) * vocab, row + prompt_length * vocab);
    search.advance(logits.data(), local_sources);
    for (int source : local_sources) {
      row_window.push_back(static_cast<int>(w));
      sources.push_back(static_cast<int>(w) + source);
    }
  }
  std::vector<Tensor> step_inputs(decoder_with_past_->inputs().size());
  for (const PastSource& source : past_) {
    step_inputs[static_cast<std::size_t>(source.step_input)] =
        gather_rows(outputs[static_cast<std::size_t>(source.decoder_output)], sources);
  }
  // ---- one token per row and step: decoder_with_past, the past kept between steps ----
  while (!row_window.empty()) {
    const auto n = static_cast<std::int64_t>(row_window.size());
    Tensor step_ids = Tensor::uninitialized(DType::kI64, {n, 1});
    for (std::int64_t r = 0, first = 0; r < n; ++r) {
      if (r > 0 &&
          row_window[static_cast<std::size_t>(r)] != row_window[static_cast<std::size_t>(r - 1)])
        first = r;
      step_ids.data<std::int64_t>()[r] =
          searches[static_cast<std::size_t>(row_window[static_cast<std::size_t>(r)])]->next_token(
              static_cast<int>(r - first));
    }
    step_inputs[static_cast<std::size_t>(step_ids_input_)] = std::move(step_ids);
    VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> step_out, step_context_->run(step_inputs));
    ++calls_.decoder_with_past;
    const Tensor& step_logits = step_out[static_cast<std::size_t>(step_logits_)];
    VOXRT_RETURN_IF_ERROR(expect_logits(step_logits, n, 1, vocab, "decoder_with_past"));
    std::vector<int> next_window;
    sources.clear();
    for (std::int64_t first = 0; first < n;) {
      const int w = row_window[static_cast<std::size_t>(first)];
      std::int64_t end = first;
      while (end < n && row_window[static_cast<std::size_t>(end)] == w) ++end;
      const float* block = step_logits.data<float>() + first * vocab;
      logits.assign(block, block + (end - first) * vocab);
      searches[static_cast<std::size_t>(w)]->advance(logits.data(), local_sources);
      for (int source : local_sources) {
        next_window.push_back(w);
        sources.push_back(static_cast<int>(first) + source);
      }
      first = end;
    }
    bool same_rows = sources.size() == row_window.size();
    for (std::size_t i = 0; i < sources.size() && same_rows; ++i)
      same_rows = sources[i] == static_cast<int>(i);
    // The cross-attention past is the same for every row of a window: only a change in how many
    // rows each window has moves it (a beam reordered within its window does not).
    const bool same_layout = next_window == row_window;
    for (const PastSource& source : past_) {
      Tensor& past = step_inputs[static_cast<std::size_t>(source.step_input)];
      const bool self_attention = source.step_output >= 0;
      if (self_attention) past = std::move(step_out[static_cast<std::size_t>(source.step_output)]);
      if (!same_rows && (self_attention || !same_layout)) past = gather_rows(past, sources);
    }
    row_window = std::move(next_window);
  }
  return Status::ok();
}

}  // namespace voxrt::stream
