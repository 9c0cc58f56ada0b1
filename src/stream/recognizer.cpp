#include "stream/recognizer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>
#include <type_traits>

#include "stream/model_metadata.h"

namespace voxrt::stream {
namespace {

Expected<StateAtEndpoint> metadata_state_at_endpoint(
    const std::map<std::string, std::string>& metadata) {
  auto it = metadata.find("voxrt.state_at_endpoint");
  if (it == metadata.end() || it->second == "reset") return StateAtEndpoint::kReset;
  if (it->second == "carry") return StateAtEndpoint::kCarry;
  return invalid_argument(
      "engine metadata: 'voxrt.state_at_endpoint' must be reset or carry, "
      "found '",
      it->second, "'");
}

// More than this many chunks of silence before an onset is no longer a pre-roll.
constexpr int kMaxVadPrerollChunks = 8;

// voxrt.vad_preroll_chunks: whole chunks before the VAD's speech start that the model still
// hears (0 when absent).
Expected<int> metadata_vad_preroll_chunks(const std::map<std::string, std::string>& metadata,
                                          const std::string& where) {
  auto it = metadata.find("voxrt.vad_preroll_chunks");
  if (it == metadata.end()) return 0;
  const std::string& text = it->second;
  if (text.size() == 1 && text[0] >= '0' && text[0] - '0' <= kMaxVadPrerollChunks) {
    return text[0] - '0';
  }
  return invalid_argument(where,
                          ": metadata 'voxrt.vad_preroll_chunks' must be a whole number "
                          "of chunks from 0 to ",
                          kMaxVadPrerollChunks, ", found '", text, "'");
}

// The model's tuned decoding settings (voxrt.decoding.*); absent keys stay unset.
Expected<DecodingChoices> metadata_decoding(const std::map<std::string, std::string>& metadata) {
  DecodingChoices choices;
  auto number = [&](const char* key, auto& field) -> Status {
    auto it = metadata.find(key);
    if (it == metadata.end()) return Status::ok();
    try {
      std::size_t used = 0;
      const double value = std::stod(it->second, &used);
      if (used != it->second.size()) throw std::invalid_argument("bad");
      using Field = typename std::remove_reference_t<decltype(field)>::value_type;
      // Out of int's range is out of every setting's range: clamped, validate() names it.
      field = std::is_integral_v<Field> ? static_cast<Field>(std::clamp(value, -1.0, 1e9))
                                        : static_cast<Field>(value);
    } catch (...) {
      return invalid_argument("engine metadata: '", key, "' must be a number, found '", it->second,
                              "'");
    }
    return Status::ok();
  };
  VOXRT_RETURN_IF_ERROR(number("voxrt.decoding.beam_width", choices.beam_width));
  VOXRT_RETURN_IF_ERROR(number("voxrt.decoding.lm_weight", choices.lm_weight));
  VOXRT_RETURN_IF_ERROR(number("voxrt.decoding.word_bonus", choices.word_bonus));
  VOXRT_RETURN_IF_ERROR(number("voxrt.decoding.hotword_bonus", choices.hotword_bonus));
  Status valid = choices.validate();
  if (!valid) return valid.with_context("engine metadata voxrt.decoding.*");
  return choices;
}

}  // namespace

Status RecognizerConfig::validate() const {
  if (partial_interval_ms < 0)
    return invalid_argument("partial_interval_ms must be 0 (off) or more, found ",
                            partial_interval_ms);
  if (engine_path.empty()) return invalid_argument("recognizer: engine_path is empty");
  if (max_streams < 1)
    return invalid_argument("recognizer: max_streams must be >= 1, got ", max_streams);
  if (max_batch < 0)
    return invalid_argument("recognizer: max_batch must be >= 1 (or 0: the engine's), got ",
                            max_batch);
  if (threads < 1) return invalid_argument("recognizer: threads must be >= 1, got ", threads);
  if (!lm_path.empty() && decoder != DecoderKind::kBeam) {
    return invalid_argument("recognizer: an LM (", lm_path, ") needs the beam decoder");
  }
  VOXRT_RETURN_IF_ERROR(decoding.validate());
  VOXRT_RETURN_IF_ERROR(encoder_decoder.validate());
  if (decoding.lexicon_only.value_or(false) && lm_path.empty())
    return invalid_argument("recognizer: lexicon_only needs an LM (its words are the lexicon)");
  if (vad_preroll_chunks &&
      (*vad_preroll_chunks < 0 || *vad_preroll_chunks > kMaxVadPrerollChunks)) {
    return invalid_argument("recognizer: vad_preroll_chunks must be 0..", kMaxVadPrerollChunks,
                            ", got ", *vad_preroll_chunks);
  }
  if (vad_endpoint_tail_ms && (*vad_endpoint_tail_ms < 0 || *vad_endpoint_tail_ms > 10000)) {
    return invalid_argument("recognizer: vad_endpoint_tail_ms must be 0..10000, got ",
                            *vad_endpoint_tail_ms);
  }
  if (vad == VadKind::kSilero) {
    if (silero_engine_path.empty())
      return invalid_argument("recognizer: vad=silero needs silero_engine_path");
    VOXRT_RETURN_IF_ERROR(silero_vad.validate());
  }
  if (wake_word) VOXRT_RETURN_IF_ERROR(wake_word->validate());
  VOXRT_RETURN_IF_ERROR(transducer.validate());
  return endpoint.validate();
}

std::string RecognizerConfig::to_string() const {
  std::ostringstream out;
  out << "engine=" << engine_path << " max_streams=" << max_streams << " max_batch=" << max_batch
      << " threads=" << threads
      << " decoder=" << (decoder == DecoderKind::kGreedy ? "greedy" : "beam");
  if (decoder == DecoderKind::kBeam)
    out << " beam=" << beam.to_string() << " decoding=" << decoding.to_string()
        << " lm=" << (lm_path.empty() ? "none" : lm_path);
  out << " vad=" << (vad == VadKind::kOff ? "off" : vad == VadKind::kEnergy ? "energy" : "silero");
  if (vad == VadKind::kSilero) out << " silero=" << silero_engine_path << silero_vad.to_string();
  if (wake_word) out << " wake_word=" << wake_word->to_string();
  if (vad_endpoint_tail_ms) out << " vad_endpoint_tail_ms=" << *vad_endpoint_tail_ms;
  if (vad_preroll_chunks) out << " vad_preroll_chunks=" << *vad_preroll_chunks;
  if (state_at_endpoint)
    out << " state_at_endpoint="
        << (*state_at_endpoint == StateAtEndpoint::kReset ? "reset" : "carry");
  out << " endpoint={" << endpoint.to_string() << "}";
  out << " encoder_decoder=" << encoder_decoder.to_string();
  return out.str();
}

// ---- Recognizer ------------------------------------------------------------------------------

Expected<std::shared_ptr<Recognizer>> Recognizer::create(const RecognizerConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto r = std::shared_ptr<Recognizer>(new Recognizer());
  r->config_ = config;
  VOXRT_ASSIGN_OR_RETURN(r->family_, load_model_family(config));
  const audio::FeatureConfig& features = r->family_->feature_config();
  VOXRT_ASSIGN_OR_RETURN(auto computer, audio::FrameFeatureComputer::create(features));
  r->feature_computer_ = std::make_shared<const audio::FrameFeatureComputer>(std::move(computer));
  r->feature_dim_ = features.output_dim();
  const auto& metadata = r->family_->metadata();
  VOXRT_ASSIGN_OR_RETURN(const double tail_ms, metadata_ms(metadata, "voxrt.endpoint_tail_ms",
                                                           300.0, config.engine_path));
  r->vad_endpoint_tail_ms_ = config.vad_endpoint_tail_ms.value_or(static_cast<int>(tail_ms));
  if (config.vad_preroll_chunks) {
    r->vad_preroll_chunks_ = *config.vad_preroll_chunks;
  } else {
    VOXRT_ASSIGN_OR_RETURN(r->vad_preroll_chunks_,
                           metadata_vad_preroll_chunks(metadata, config.engine_path));
  }
  if (config.state_at_endpoint) {
    r->state_at_endpoint_ = *config.state_at_endpoint;
  } else {
    VOXRT_ASSIGN_OR_RETURN(r->state_at_endpoint_, metadata_state_at_endpoint(metadata));
  }
  VOXRT_ASSIGN_OR_RETURN(r->model_decoding_, metadata_decoding(metadata));
  VOXRT_ASSIGN_OR_RETURN(
      auto endpoint, decode::EndpointDetector::create(config.endpoint, r->family_->time_base()));
  r->endpoint_.emplace(std::move(endpoint));
  // The family resolved max_batch against its engines' profiles (0: theirs, at most 32).
  r->config_.max_batch = r->family_->max_batch();
  if (config.partial_interval_ms > 0 && r->family_->decodes_filling_chunks()) {
    r->partial_interval_frames_ = std::max(
        1, static_cast<int>(std::lround(config.partial_interval_ms / features.frame_shift_ms)));
  }
  if (config.vad == VadKind::kSilero || config.wake_word) {
    if (features.sample_rate_hz != 16000) {
      return invalid_argument(config.engine_path, ": the model runs at ", features.sample_rate_hz,
                              " Hz; Silero VAD and the wake word take 16 kHz");
    }
  }
  if (config.vad == VadKind::kSilero) {
    VOXRT_ASSIGN_OR_RETURN(r->silero_,
                           SileroVadModel::load(config.silero_engine_path, config.threads));
    if (r->silero_->input_samples() != config.silero_vad.model_input_samples()) {
      return invalid_argument(config.silero_engine_path, ": the engine takes ",
                              r->silero_->input_samples(), " samples per window, the config ",
                              config.silero_vad.to_string(), " gives ",
                              config.silero_vad.model_input_samples());
    }
  }
  if (config.wake_word) {
    WakeWordConfig wake = *config.wake_word;
    wake.threads = config.threads;
    VOXRT_ASSIGN_OR_RETURN(r->wake_models_, WakeWordModels::load(wake));
  }
  return r;
}

Expected<ResolvedDecoding> Recognizer::decoding_for(const StreamOptions& options) const {
  VOXRT_RETURN_IF_ERROR(options.decoding.validate());
  ResolvedDecoding resolved;
  resolved.decoder = options.decoder.value_or(config_.decoder);
  if (!options.hotwords.empty() && resolved.decoder != DecoderKind::kBeam &&
      family_->hotwords_need_beam_search()) {
    return invalid_argument("stream: hotwords need the beam decoder (--decoder beam) with a ",
                            family_->name(), " model");
  }
  const bool has_lm = family_->has_lm();
  if (options.use_lm.value_or(false) && !has_lm)
    return invalid_argument("stream: asks for the LM, but the recognizer has none (--lm)");
  resolved.use_lm =
      resolved.decoder == DecoderKind::kBeam && has_lm && options.use_lm.value_or(true);
  DecodingChoices choices = options.decoding.over(config_.decoding);
  // The model's values were tuned with an LM; without one the built-in defaults fit better (a
  // word bonus without an LM only splits words).
  if (resolved.use_lm) {
    choices = choices.over(model_decoding_);
  } else if (!choices.hotword_bonus) {
    choices.hotword_bonus = model_decoding_.hotword_bonus;
  }
  resolved.beam = config_.beam;
  resolved.beam.beam_width = choices.beam_width.value_or(resolved.beam.beam_width);
  resolved.beam.lm_weight = choices.lm_weight.value_or(resolved.beam.lm_weight);
  resolved.beam.word_insertion_bonus =
      choices.word_bonus.value_or(resolved.beam.word_insertion_bonus);
  resolved.transducer = config_.transducer;
  resolved.transducer.beam_width = choices.beam_width.value_or(resolved.transducer.beam_width);
  resolved.hotword_bonus = choices.hotword_bonus.value_or(resolved.hotword_bonus);
  resolved.timestamps = choices.timestamps.value_or(false);
  // The recognizer's lexicon_only goes with its LM; a stream asking for it needs the LM.
  resolved.lexicon_only = choices.lexicon_only.value_or(false) && resolved.use_lm;
  if (options.decoding.lexicon_only.value_or(false) && !resolved.use_lm) {
    return invalid_argument(
        "stream: lexicon_only needs beam search with an LM (its words are "
        "the lexicon)");
  }
  return resolved;
}

Expected<std::string> Recognizer::normalise_hotword(std::string_view phrase) const {
  const decode::Vocabulary& vocabulary = family_->vocabulary();
  std::string normalised = vocabulary.normalise_phrase(phrase);
  if (normalised.empty())
    return invalid_argument("hotword '", phrase, "' has nothing the model can spell");
  auto units = vocabulary.encode(normalised);
  if (!units) {
    return invalid_argument("hotword '", phrase, "': the model's units cannot spell it (",
                            units.status().message(), ")");
  }
  return normalised;
}

Expected<std::unique_ptr<Stream>> Recognizer::open_stream(const StreamOptions& options) {
  if (options.sample_rate_hz < 1000 || options.sample_rate_hz > 384000) {
    return invalid_argument("stream: sample_rate_hz must be 1000..384000, got ",
                            options.sample_rate_hz);
  }
  VOXRT_ASSIGN_OR_RETURN(const ResolvedDecoding decoding, decoding_for(options));
  if (!options.whisper.empty() && family_->name() != "encoder_decoder") {
    return invalid_argument("stream: prompt, temperature and temperature_fallback are for ",
                            "encoder_decoder (Whisper) models; this model is ", family_->name());
  }
  VOXRT_RETURN_IF_ERROR(options.whisper.validate());
  StreamOptions normalised = options;
  normalised.hotwords.clear();
  for (const std::string& phrase : options.hotwords) {
    VOXRT_ASSIGN_OR_RETURN(std::string hotword, normalise_hotword(phrase));
    normalised.hotwords.push_back(std::move(hotword));
  }
  auto stream = std::unique_ptr<Stream>(new Stream(shared_from_this(), normalised));
  VOXRT_ASSIGN_OR_RETURN(stream->model_, family_->open_stream(normalised, decoding));
  const audio::FeatureConfig& feature_config = family_->feature_config();
  if (options.sample_rate_hz != feature_config.sample_rate_hz) {
    VOXRT_ASSIGN_OR_RETURN(
        auto resampler,
        audio::StreamingResampler::create(options.sample_rate_hz, feature_config.sample_rate_hz));
    stream->resampler_.emplace(std::move(resampler));
  }
  stream->features_.emplace(audio::StreamingFeatureExtractor::create(feature_computer_));
  if (config_.vad == VadKind::kEnergy) {
    audio::EnergyVadConfig vad_config = config_.energy_vad;
    vad_config.sample_rate_hz = feature_config.sample_rate_hz;
    VOXRT_ASSIGN_OR_RETURN(auto vad, audio::EnergyVad::create(vad_config));
    stream->vad_.emplace(std::move(vad));
  } else if (config_.vad == VadKind::kSilero) {
    stream->silero_framer_.emplace(config_.silero_vad);
    VOXRT_ASSIGN_OR_RETURN(auto segmenter,
                           audio::SpeechProbabilitySegmenter::create(config_.silero_vad));
    stream->silero_segmenter_.emplace(std::move(segmenter));
    stream->silero_state_.assign(SileroVadModel::kStateValues, 0.0f);
  }
  if (wake_models_) {
    stream->wake_.emplace(wake_models_);
    stream->awake_ = false;
  }
  return stream;
}

Status Recognizer::run_front_end(std::span<Stream* const> streams) {
  for (Stream* s : streams) {
    if (!s->wake_ || s->awake_) continue;
    // One stream at a time: the wake word is an optional stage, usually on few streams.
    while (s->wake_->has_chunk() && !s->wake_->fired())
      VOXRT_RETURN_IF_ERROR(s->wake_->process_chunk());
    s->route_ready();
  }
  if (!silero_) return Status::ok();
  const int input_samples = silero_->input_samples();
  std::vector<float> windows;
  std::vector<const float*> window_ptrs;
  std::vector<float*> state_ptrs;
  std::vector<float> probabilities;
  for (;;) {
    // One window from every stream that has one, batched; in rounds, so each stream's chunks are
    // routed as soon as its VAD has heard them.
    std::vector<Stream*> round;
    for (Stream* s : streams) {
      if (s->silero_framer_ && s->silero_framer_->has_window()) round.push_back(s);
    }
    if (round.empty()) break;
    for (std::size_t begin = 0; begin < round.size();
         begin += static_cast<std::size_t>(silero_->max_batch())) {
      const std::size_t end =
          std::min(round.size(), begin + static_cast<std::size_t>(silero_->max_batch()));
      const std::size_t n = end - begin;
      windows.resize(n * static_cast<std::size_t>(input_samples));
      window_ptrs.clear();
      state_ptrs.clear();
      for (std::size_t b = 0; b < n; ++b) {
        float* w = windows.data() + b * static_cast<std::size_t>(input_samples);
        round[begin + b]->silero_framer_->pop_window(w);
        window_ptrs.push_back(w);
        state_ptrs.push_back(round[begin + b]->silero_state_.data());
      }
      probabilities.assign(n, 0.0f);
      VOXRT_RETURN_IF_ERROR(silero_->run(window_ptrs, state_ptrs, probabilities));
      for (std::size_t b = 0; b < n; ++b) {
        Stream* s = round[begin + b];
        s->silero_segmenter_->accept(probabilities[b], s->new_vad_events_);
      }
    }
    for (Stream* s : round) s->route_ready();
  }
  for (Stream* s : streams) {
    if (s->silero_framer_ && s->silero_framer_->finished() && !s->silero_done_) {
      s->silero_segmenter_->input_finished(s->silero_framer_->samples_in(), s->new_vad_events_);
      s->silero_done_ = true;
      s->route_ready();
    }
  }
  return Status::ok();
}

DeviceKind Recognizer::engine_device() const {
  return family_->device();
}

Expected<int> Recognizer::advance(std::span<Stream* const> streams) {
  VOXRT_RETURN_IF_ERROR(run_front_end(streams));
  int calls = 0;
  for (;;) {
    // Silence chunks go to their decoders first (no model work), in stream order; then full
    // chunks batch together, and a stream's last, shorter chunk runs with others of its length.
    std::map<int, std::vector<Stream*>> by_frames;
    for (Stream* s : streams) {
      // A stream that went back to waiting for its wake word runs no more model work.
      while (!s->ready_chunks_.empty() &&
             (!s->ready_chunks_.front().run_model || (s->wake_ && !s->awake_))) {
        if (s->ready_chunks_.front().run_model) ++s->chunks_skipped_;
        VOXRT_RETURN_IF_ERROR(s->deliver_blanks(s->ready_chunks_.front()));
        s->ready_chunks_.pop_front();
      }
      if (!s->ready_chunks_.empty()) {
        by_frames[static_cast<int>(s->ready_chunks_.front().features.size()) / feature_dim_]
            .push_back(s);
      }
    }
    if (by_frames.empty()) break;
    for (auto& [frames, ready] : by_frames) {
      for (std::size_t begin = 0; begin < ready.size();
           begin += static_cast<std::size_t>(config_.max_batch)) {
        const std::size_t end =
            std::min(ready.size(), begin + static_cast<std::size_t>(config_.max_batch));
        VOXRT_RETURN_IF_ERROR(
            run_batch(std::span<Stream* const>(ready.data() + begin, end - begin), frames));
        ++calls;
      }
    }
  }
  VOXRT_RETURN_IF_ERROR(run_partials(streams));
  for (Stream* s : streams) {
    if (s->input_done_ && !s->finished_ && s->ready_chunks_.empty() && s->unrouted_.empty()) {
      s->finish_utterance(decode::EndpointReason::kNone);
      s->finished_ = true;
    }
  }
  return calls;
}

Status Recognizer::run_batch(std::span<Stream* const> batch, int frames) {
  std::vector<ChunkInput> inputs;
  inputs.reserve(batch.size());
  for (Stream* s : batch) {
    const Stream::Chunk& chunk = s->ready_chunks_.front();
    const int valid_frames = chunk.valid_frames >= 0 ? chunk.valid_frames : layout().shift_frames;
    inputs.push_back(
        ChunkInput{s->model_.get(), chunk.features.data(), s->output_frames(chunk), valid_frames});
  }
  VOXRT_RETURN_IF_ERROR(family_->run_batch(inputs, frames));
  for (std::size_t b = 0; b < batch.size(); ++b) {
    Stream* s = batch[b];
    const Stream::Chunk chunk = std::move(s->ready_chunks_.front());
    s->ready_chunks_.pop_front();
    ++s->chunks_run_;
    s->after_frames(inputs[b].valid_output_frames, chunk.ends_speech);
  }
  return Status::ok();
}

Status Recognizer::run_partials(std::span<Stream* const> streams) {
  if (partial_interval_frames_ <= 0) return Status::ok();
  std::vector<Stream*> due;
  for (Stream* s : streams) {
    if (s->filling_partial_due(partial_interval_frames_)) due.push_back(s);
  }
  const ChunkLayout& chunks = layout();
  for (std::size_t begin = 0; begin < due.size();
       begin += static_cast<std::size_t>(config_.max_batch)) {
    const std::size_t end =
        std::min(due.size(), begin + static_cast<std::size_t>(config_.max_batch));
    // Each stream's frames so far, padded as its last chunk would be.
    std::vector<std::vector<float>> padded(end - begin);
    std::vector<ChunkInput> inputs;
    for (std::size_t i = begin; i < end; ++i) {
      Stream* s = due[i];
      std::vector<float>& frames = padded[i - begin];
      frames = s->frame_buffer_;
      const int held = static_cast<int>(frames.size()) / feature_dim_;
      for (int f = held; f < chunks.chunk_frames; ++f)
        frames.insert(frames.end(), chunks.pad_frame.begin(), chunks.pad_frame.end());
      const int output_frames = (held + chunks.subsampling - 1) / chunks.subsampling;
      inputs.push_back(ChunkInput{s->model_.get(), frames.data(), output_frames, held});
      s->partial_chunk_start_ = s->frames_collected_;
      s->partial_chunk_frames_ = held;
    }
    VOXRT_RETURN_IF_ERROR(family_->run_partial_batch(inputs, chunks.chunk_frames));
    for (std::size_t i = begin; i < end; ++i) due[i]->emit_partial();
  }
  return Status::ok();
}

// ---- Stream ----------------------------------------------------------------------------------

Stream::Stream(std::shared_ptr<Recognizer> recognizer, StreamOptions options)
    : recognizer_(std::move(recognizer)), options_(std::move(options)) {}

Stream::~Stream() = default;

Status Stream::accept_pcm(std::span<const float> samples) {
  if (input_done_) return failed_precondition("stream: audio after input_finished()");
  samples_in_ += static_cast<long long>(samples.size());
  std::span<const float> at_model_rate = samples;
  if (resampler_) {
    resampled_.clear();
    VOXRT_RETURN_IF_ERROR(resampler_->process(samples, resampled_));
    at_model_rate = resampled_;
  }
  model_rate_samples_ += static_cast<long long>(at_model_rate.size());
  if (vad_) vad_->accept_waveform(at_model_rate, new_vad_events_);
  if (silero_framer_) silero_framer_->accept_waveform(at_model_rate);
  if (wake_ && !wake_->fired()) wake_->accept_waveform(at_model_rate);
  features_->accept_waveform(at_model_rate);
  collect_chunks(false);
  return Status::ok();
}

Status Stream::input_finished() {
  if (input_done_) return Status::ok();
  if (resampler_) {
    resampled_.clear();
    VOXRT_RETURN_IF_ERROR(resampler_->flush(resampled_));
    model_rate_samples_ += static_cast<long long>(resampled_.size());
    if (vad_) vad_->accept_waveform(resampled_, new_vad_events_);
    if (silero_framer_) silero_framer_->accept_waveform(resampled_);
    if (wake_ && !wake_->fired()) wake_->accept_waveform(resampled_);
    features_->accept_waveform(resampled_);
  }
  if (vad_) vad_->input_finished(new_vad_events_);
  if (silero_framer_) silero_framer_->input_finished();
  features_->input_finished();
  input_done_ = true;
  collect_chunks(true);
  return Status::ok();
}

void Stream::collect_chunks(bool flush) {
  const int dim = recognizer_->feature_dim_;
  const ChunkLayout& layout = recognizer_->layout();
  std::vector<float> popped;
  features_->pop_frames(popped, features_->frames_ready());
  frame_buffer_.insert(frame_buffer_.end(), popped.begin(), popped.end());
  const auto& features = recognizer_->feature_config();
  const long long shift_samples = features.frame_shift_samples();
  const long long tail_samples = features.frame_length_samples() - shift_samples;
  // A chunk is decided (VAD, wake word) once the audio of every frame it holds has been heard.
  auto queue = [&](Chunk c, int frames_held, bool last) {
    c.first_frame = frames_collected_;
    const long long end_frame = frames_collected_ + frames_held;
    unrouted_.push_back(PendingChunk{std::move(c), end_frame * shift_samples + tail_samples, last});
  };
  const std::size_t chunk_values = static_cast<std::size_t>(layout.chunk_frames) * dim;
  const std::size_t shift_values = static_cast<std::size_t>(layout.shift_frames) * dim;
  while (frame_buffer_.size() >= chunk_values) {
    Chunk c;
    c.features.assign(frame_buffer_.begin(),
                      frame_buffer_.begin() + static_cast<std::ptrdiff_t>(chunk_values));
    // The lookahead (chunk_frames - shift_frames) stays for the next chunk.
    frame_buffer_.erase(frame_buffer_.begin(),
                        frame_buffer_.begin() + static_cast<std::ptrdiff_t>(shift_values));
    queue(std::move(c), layout.chunk_frames, flush && frame_buffer_.empty());
    frames_collected_ += layout.shift_frames;
  }
  // At the end, the frames left (fewer than a chunk; with a lookahead, possibly more than a
  // shift) run in padded chunks that consume shift_frames each until none is left.
  while (flush && !frame_buffer_.empty()) {
    const int left = static_cast<int>(frame_buffer_.size()) / dim;
    // Pad with the family's silence frame up to what the engine accepts, then to a multiple of
    // the subsampling (never beyond a whole chunk).
    const int sub = layout.subsampling;
    int padded = std::max(left, layout.min_chunk_frames);
    if (padded < layout.chunk_frames)
      padded = std::min(layout.chunk_frames, (padded + sub - 1) / sub * sub);
    const int consumed = std::min(left, layout.shift_frames);
    Chunk c;
    c.features.assign(frame_buffer_.begin(), frame_buffer_.end());
    c.features.reserve(static_cast<std::size_t>(padded) * dim);
    for (int f = left; f < padded; ++f)
      c.features.insert(c.features.end(), layout.pad_frame.begin(), layout.pad_frame.end());
    c.valid_frames = consumed;
    frame_buffer_.erase(frame_buffer_.begin(),
                        frame_buffer_.begin() + static_cast<std::ptrdiff_t>(consumed) * dim);
    queue(std::move(c), left, frame_buffer_.empty());
    frames_collected_ += consumed;
  }
  route_ready();
}

long long Stream::decided_until_sample() const {
  constexpr long long kAll = std::numeric_limits<long long>::max();
  long long until = kAll;
  // A chunk is routed once the VAD can no longer report an event dated inside it, so routing
  // (what runs through the model, where the VAD's endpoint falls) is the same however the audio
  // was cut into pieces.
  if (vad_ && !input_done_) until = vad_->decided_until_sample();
  if (silero_segmenter_ && !silero_done_) until = silero_segmenter_->decided_until_sample();
  // Without more audio the wake word's partial last chunk is never scored.
  if (wake_ && !awake_ && !wake_->fired() && (!input_done_ || wake_->has_chunk()))
    until = std::min<long long>(until, wake_->samples_scored());
  return until;
}

void Stream::route_ready() {
  vad_events_.insert(vad_events_.end(), new_vad_events_.begin(), new_vad_events_.end());
  new_vad_events_.clear();
  const long long until = decided_until_sample();
  while (!unrouted_.empty() && unrouted_.front().end_sample <= until) {
    PendingChunk p = std::move(unrouted_.front());
    unrouted_.pop_front();
    route(std::move(p.chunk), p.end_sample, p.last);
  }
  if (input_done_ && unrouted_.empty() && until == std::numeric_limits<long long>::max()) {
    while (!preroll_.empty()) {
      preroll_.front().run_model = false;
      ready_chunks_.push_back(std::move(preroll_.front()));
      preroll_.pop_front();
      ++chunks_skipped_;
    }
  }
}

// VAD events apply to the chunk whose audio they fall in, so the decision for each chunk is the
// same however the audio was cut into pieces (and, for Silero, however streams were batched).
void Stream::route(Chunk c, long long end_sample, bool last) {
  bool speech_in_chunk = in_speech_;
  const long long tail_samples = static_cast<long long>(recognizer_->vad_endpoint_tail_ms_) *
                                 recognizer_->feature_config().sample_rate_hz / 1000;
  while (!vad_events_.empty() && (last || vad_events_.front().sample <= end_sample)) {
    if (vad_events_.front().kind == audio::VadEvent::Kind::kSpeechStart) {
      in_speech_ = true;
      speech_in_chunk = true;
      // Speech came back before the endpoint was taken: the same utterance goes on.
      vad_endpoint_at_sample_ = -1;
    } else {
      in_speech_ = false;
      vad_endpoint_at_sample_ = vad_events_.front().sample + tail_samples;
    }
    vad_events_.pop_front();
  }
  // The model runs on until the tail after the end of speech has passed, and the endpoint is
  // taken after the chunk that reaches it, so the word's last units are decoded first.
  bool in_tail = vad_endpoint_at_sample_ >= 0;
  if (in_tail && (last || end_sample >= vad_endpoint_at_sample_)) {
    c.ends_speech = true;
    vad_endpoint_at_sample_ = -1;
  }
  if (wake_ && !awake_) {
    if (wake_->fired() && wake_->fired_at_sample() <= end_sample) {
      awake_ = true;
      ++wake_detections_;
      last_wake_sample_ = wake_->fired_at_sample();
      // The wake phrase's own end of speech is not the command's: its tail is not decoded and
      // ends no utterance. The frames of this chunk that end before the firing point hold the
      // phrase's last sounds: they become the silence frame, or a model that hears them (the
      // default model version 2 read the end of "hey jarvis" as "is") ends an utterance there
      // and re-arms the wake word before the command.
      in_tail = false;
      c.ends_speech = false;
      vad_endpoint_at_sample_ = -1;
      silence_frames_before(c, wake_->fired_at_sample());
    } else {
      // Before the wake word: no model work and no text; the decoder sees blanks so times stay
      // right.
      while (!preroll_.empty()) {
        preroll_.front().run_model = false;
        ready_chunks_.push_back(std::move(preroll_.front()));
        preroll_.pop_front();
        ++chunks_skipped_;
      }
      c.run_model = false;
      c.ends_speech = false;
      ready_chunks_.push_back(std::move(c));
      ++chunks_skipped_;
      return;
    }
  }
  const bool gated = vad_.has_value() || silero_segmenter_.has_value();
  if (!gated || speech_in_chunk || in_speech_ || in_tail) {
    while (!preroll_.empty()) {
      ready_chunks_.push_back(std::move(preroll_.front()));
      preroll_.pop_front();
    }
    ready_chunks_.push_back(std::move(c));
    return;
  }
  preroll_.push_back(std::move(c));
  while (static_cast<int>(preroll_.size()) > recognizer_->vad_preroll_chunks_ ||
         (last && !preroll_.empty())) {
    // Silence costs no model work: the decoder sees blanks, so times and endpoints stay right.
    preroll_.front().run_model = false;
    ready_chunks_.push_back(std::move(preroll_.front()));
    preroll_.pop_front();
    ++chunks_skipped_;
  }
}

void Stream::silence_frames_before(Chunk& chunk, long long sample) const {
  const ChunkLayout& layout = recognizer_->layout();
  const auto& features = recognizer_->feature_config();
  const long long shift_samples = features.frame_shift_samples();
  const long long length_samples = features.frame_length_samples();
  const std::size_t dim = layout.pad_frame.size();
  if (dim == 0) return;
  const std::size_t frames = chunk.features.size() / dim;
  for (std::size_t k = 0; k < frames; ++k) {
    const long long frame_end_sample =
        (chunk.first_frame + static_cast<long long>(k)) * shift_samples + length_samples;
    if (frame_end_sample > sample) break;
    std::copy(layout.pad_frame.begin(), layout.pad_frame.end(),
              chunk.features.begin() + static_cast<std::ptrdiff_t>(k * dim));
  }
}

int Stream::output_frames(const Chunk& chunk) const {
  const ChunkLayout& layout = recognizer_->layout();
  const int frames = chunk.valid_frames >= 0 ? chunk.valid_frames : layout.shift_frames;
  // Output frame j depends on input frames <= subsampling * j.
  return (frames + layout.subsampling - 1) / layout.subsampling;
}

Status Stream::deliver_blanks(const Chunk& chunk) {
  const int frames = output_frames(chunk);
  if (frames <= 0) return Status::ok();
  VOXRT_RETURN_IF_ERROR(model_->accept_skipped_frames(frames));
  after_frames(frames, chunk.ends_speech);
  return Status::ok();
}

void Stream::after_frames(int frames, bool vad_ended) {
  if (frames <= 0) return;
  const DecoderProgress progress = model_->progress();
  const bool vad_end =
      vad_ended && recognizer_->config_.endpoint.use_vad_endpoint && progress.has_tokens;
  const auto reason = recognizer_->endpoint_->detect(
      progress.utterance_frames, progress.trailing_blank_frames, progress.has_tokens, vad_end);
  if (reason != decode::EndpointReason::kNone) {
    finish_utterance(reason);
  } else {
    emit_partial();
  }
}

bool Stream::filling_partial_due(int interval_frames) const {
  if (!options_.filling_partials || input_done_ || !ready_chunks_.empty() || !unrouted_.empty() ||
      !preroll_.empty() || (wake_ && !awake_)) {
    return false;
  }
  // Under a VAD, only a chunk in which speech was heard: silence is not decoded (and Whisper
  // says things on silence).
  if (vad_.has_value() || silero_segmenter_.has_value()) {
    auto starts = [](const audio::VadEvent& e) {
      return e.kind == audio::VadEvent::Kind::kSpeechStart;
    };
    if (!in_speech_ && std::none_of(vad_events_.begin(), vad_events_.end(), starts) &&
        std::none_of(new_vad_events_.begin(), new_vad_events_.end(), starts)) {
      return false;
    }
  }
  const int held = static_cast<int>(frame_buffer_.size()) / recognizer_->feature_dim_;
  const int decoded = partial_chunk_start_ == frames_collected_ ? partial_chunk_frames_ : 0;
  return held - decoded >= interval_frames;
}

void Stream::emit_partial() {
  decode::DecodingResult partial = model_->partial();
  if (partial.text == last_partial_) return;
  last_partial_ = partial.text;
  partial.is_final = false;
  results_.push_back(StreamResult{std::move(partial), utterance_, decode::EndpointReason::kNone});
}

void Stream::finish_utterance(decode::EndpointReason reason) {
  decode::DecodingResult final_result = model_->finalize();
  final_result.is_final = true;
  // An endpoint over pure silence has nothing to say; a stream that never said anything still
  // gets one (empty) final at its end.
  const bool said_something = !final_result.text.empty();
  if (said_something || (reason == decode::EndpointReason::kNone && utterance_ == 0)) {
    results_.push_back(StreamResult{std::move(final_result), utterance_, reason});
    ++utterance_;
  }
  if (wake_ && awake_ && said_something && reason != decode::EndpointReason::kNone &&
      recognizer_->wake_models_->config().rearm_after_utterance) {
    // The utterance after the wake word is over: wait for it again, from fresh buffers.
    awake_ = false;
    wake_score_before_ = wake_word_max_score();
    wake_.emplace(recognizer_->wake_models_, model_rate_samples_);
  }
  model_->reset_utterance();
  last_partial_.clear();
  // After an utterance that said something and ended in silence (the VAD's end of speech, or
  // the trailing-silence rule after speech), the next one starts from fresh model states
  // (between two chunks, so the same place however the stream was batched). Not at the
  // maximum-length rule, which fires inside speech, nor at the rule for a long silence with
  // nothing decoded: the model may be hearing a word it has not emitted yet.
  const bool after_speech = reason == decode::EndpointReason::kVadEndOfSpeech ||
                            reason == decode::EndpointReason::kRule2TrailingSilenceAfterSpeech;
  if (said_something && after_speech &&
      recognizer_->state_at_endpoint_ == StateAtEndpoint::kReset) {
    (void)model_->reset_state();
  }
}

std::vector<StreamResult> Stream::take_results() {
  std::vector<StreamResult> out;
  out.swap(results_);
  return out;
}

}  // namespace voxrt::stream
