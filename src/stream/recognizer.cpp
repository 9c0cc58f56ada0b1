#include "stream/recognizer.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "runtime/engine_impl.h"

namespace voxrt::stream {
namespace {

// Log-probability that stands for "impossible" in synthetic blank frames; finite so the beam
// search's log-sum-exp stays finite.
constexpr float kImpossibleLogProb = -30.0f;

Expected<int> metadata_int(const std::map<std::string, std::string>& metadata,
                           const std::string& key, int fallback, bool required) {
  auto it = metadata.find(key);
  if (it == metadata.end()) {
    if (required)
      return invalid_argument("engine metadata: '", key,
                              "' is missing (see docs/model_contract.md)");
    return fallback;
  }
  try {
    std::size_t used = 0;
    const int value = std::stoi(it->second, &used);
    if (used != it->second.size() || value < 1) throw std::invalid_argument("bad");
    return value;
  } catch (...) {
    return invalid_argument("engine metadata: '", key, "' must be a positive integer, found '",
                            it->second, "'");
  }
}

}  // namespace

Status RecognizerConfig::validate() const {
  if (engine_path.empty()) return invalid_argument("recognizer: engine_path is empty");
  if (max_streams < 1)
    return invalid_argument("recognizer: max_streams must be >= 1, got ", max_streams);
  if (max_batch < 1) return invalid_argument("recognizer: max_batch must be >= 1, got ", max_batch);
  if (threads < 1) return invalid_argument("recognizer: threads must be >= 1, got ", threads);
  if (!lm_path.empty() && decoder != DecoderKind::kBeam) {
    return invalid_argument("recognizer: an LM (", lm_path, ") needs the beam decoder");
  }
  if (vad_preroll_chunks < 0)
    return invalid_argument("recognizer: vad_preroll_chunks must be >= 0");
  if (vad == VadKind::kSilero) {
    if (silero_engine_path.empty())
      return invalid_argument("recognizer: vad=silero needs silero_engine_path");
    VOXRT_RETURN_IF_ERROR(silero_vad.validate());
  }
  if (wake_word) VOXRT_RETURN_IF_ERROR(wake_word->validate());
  return endpoint.validate();
}

std::string RecognizerConfig::to_string() const {
  std::ostringstream out;
  out << "engine=" << engine_path << " max_streams=" << max_streams << " max_batch=" << max_batch
      << " threads=" << threads
      << " decoder=" << (decoder == DecoderKind::kGreedy ? "greedy" : "beam");
  if (decoder == DecoderKind::kBeam)
    out << " beam=" << beam.beam_width << " lm=" << (lm_path.empty() ? "none" : lm_path);
  out << " vad=" << (vad == VadKind::kOff ? "off" : vad == VadKind::kEnergy ? "energy" : "silero");
  if (vad == VadKind::kSilero) out << " silero=" << silero_engine_path << silero_vad.to_string();
  if (wake_word) out << " wake_word=" << wake_word->to_string();
  out << " endpoint={" << endpoint.to_string() << "}";
  return out.str();
}

// ---- Recognizer ------------------------------------------------------------------------------

Expected<std::shared_ptr<Recognizer>> Recognizer::create(const RecognizerConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto r = std::shared_ptr<Recognizer>(new Recognizer());
  r->config_ = config;
  VOXRT_ASSIGN_OR_RETURN(r->engine_, Engine::load_file(config.engine_path));
  const auto& metadata = r->engine_->metadata();
  auto family = metadata.find("voxrt.model_family");
  if (family == metadata.end() || family->second != "ctc_streaming") {
    return invalid_argument(
        config.engine_path, ": voxrt.model_family is '",
        family == metadata.end() ? "(missing)" : family->second,
        "', the recognizer runs 'ctc_streaming' models (docs/model_contract.md)");
  }
  VOXRT_ASSIGN_OR_RETURN(r->chunk_frames_, metadata_int(metadata, "voxrt.chunk_frames", 0, true));
  VOXRT_ASSIGN_OR_RETURN(r->subsampling_, metadata_int(metadata, "voxrt.subsampling", 1, false));
  VOXRT_ASSIGN_OR_RETURN(r->feature_config_, audio::FeatureConfig::from_metadata(metadata));
  VOXRT_ASSIGN_OR_RETURN(auto computer, audio::FrameFeatureComputer::create(r->feature_config_));
  r->feature_computer_ = std::make_shared<const audio::FrameFeatureComputer>(std::move(computer));
  r->feature_dim_ = r->feature_config_.output_dim();
  const std::string model_dir =
      config.model_dir.empty() ? std::filesystem::path(config.engine_path).parent_path().string()
                               : config.model_dir;
  VOXRT_ASSIGN_OR_RETURN(auto vocabulary, decode::Vocabulary::from_metadata(metadata, model_dir));
  r->vocabulary_ = std::make_shared<const decode::Vocabulary>(std::move(vocabulary));
  r->time_base_ = decode::TimeBase{r->subsampling_, r->feature_config_.frame_shift_ms};
  if (!config.lm_path.empty()) {
    VOXRT_ASSIGN_OR_RETURN(auto lm, decode::ArpaLm::load(config.lm_path));
    r->lm_ = std::make_shared<const decode::ArpaLm>(std::move(lm));
  }
  VOXRT_ASSIGN_OR_RETURN(auto endpoint,
                         decode::EndpointDetector::create(config.endpoint, r->time_base_));
  r->endpoint_.emplace(std::move(endpoint));
  VOXRT_ASSIGN_OR_RETURN(r->context_, r->engine_->create_context(config.threads));
  VOXRT_ASSIGN_OR_RETURN(r->pool_, StatePool::create(r->engine_, config.max_streams));
  if (r->pool_->stream_inputs().size() != 1 || r->pool_->stream_outputs().size() != 1) {
    return invalid_argument(
        config.engine_path, ": a ctc_streaming engine has one non-state input (features) and one ",
        "non-state output (log_probs); this one has ", r->pool_->stream_inputs().size(), " and ",
        r->pool_->stream_outputs().size(), " (was it built with --state for every state pair?)");
  }
  // An engine built for whole chunks only (a fixed-frames profile, as GPU engines are: their
  // shape code must fold) takes a stream's last, shorter chunk padded up to what it accepts.
  const std::string& features_name = r->pool_->stream_inputs()[0].name;
  const auto& profiles = r->engine_->impl().contents.profiles;
  int accepted_frames = profiles.empty() ? 1 : r->chunk_frames_;
  for (const auto& profile : profiles) {
    auto it = profile.inputs.find(features_name);
    const bool bounded = it != profile.inputs.end() && it->second.min.size() >= 2;
    accepted_frames = std::min(accepted_frames, bounded ? static_cast<int>(it->second.min[1]) : 1);
  }
  r->min_chunk_frames_ = std::max(1, accepted_frames);
  if (r->pool_->states_on_device()) {
    // Every batch size the server will use gets its plan and CUDA graph now, not in the middle
    // of serving (StatePool::warm_up).
    const Tensor chunk = Tensor::zeros(DType::kF32, {1, r->chunk_frames_, r->feature_dim_});
    VOXRT_RETURN_IF_ERROR(
        r->pool_->warm_up(*r->context_, std::span<const Tensor>(&chunk, 1), config.max_batch));
  }
  if (config.vad == VadKind::kSilero || config.wake_word) {
    if (r->feature_config_.sample_rate_hz != 16000) {
      return invalid_argument(config.engine_path, ": the model runs at ",
                              r->feature_config_.sample_rate_hz,
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

Expected<std::unique_ptr<Stream>> Recognizer::open_stream(const StreamOptions& options) {
  if (options.sample_rate_hz < 1000 || options.sample_rate_hz > 384000) {
    return invalid_argument("stream: sample_rate_hz must be 1000..384000, got ",
                            options.sample_rate_hz);
  }
  if (!options.hotwords.empty() && config_.decoder != DecoderKind::kBeam) {
    return invalid_argument("stream: hotwords need the beam decoder (--decoder beam)");
  }
  VOXRT_ASSIGN_OR_RETURN(int slot, pool_->acquire());
  auto stream = std::unique_ptr<Stream>(new Stream(shared_from_this(), options, slot));
  if (options.sample_rate_hz != feature_config_.sample_rate_hz) {
    VOXRT_ASSIGN_OR_RETURN(
        auto resampler,
        audio::StreamingResampler::create(options.sample_rate_hz, feature_config_.sample_rate_hz));
    stream->resampler_.emplace(std::move(resampler));
  }
  stream->features_.emplace(audio::StreamingFeatureExtractor::create(feature_computer_));
  if (config_.vad == VadKind::kEnergy) {
    audio::EnergyVadConfig vad_config = config_.energy_vad;
    vad_config.sample_rate_hz = feature_config_.sample_rate_hz;
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
  if (config_.decoder == DecoderKind::kGreedy) {
    stream->greedy_.emplace(vocabulary_, time_base_);
  } else {
    std::shared_ptr<const decode::ContextGraph> hotwords;
    if (!options.hotwords.empty()) {
      VOXRT_ASSIGN_OR_RETURN(auto graph,
                             decode::ContextGraph::from_phrases(*vocabulary_, options.hotwords,
                                                                options.hotword_bonus));
      hotwords = std::make_shared<const decode::ContextGraph>(std::move(graph));
    }
    VOXRT_ASSIGN_OR_RETURN(auto beam, decode::CtcPrefixBeamDecoder::create(
                                          vocabulary_, config_.beam, time_base_, lm_, hotwords));
    stream->beam_.emplace(std::move(beam));
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
  return engine_->impl().contents.target.device;
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
  for (Stream* s : streams) {
    if (s->input_done_ && !s->finished_ && s->ready_chunks_.empty() && s->unrouted_.empty()) {
      s->finish_utterance(decode::EndpointReason::kNone);
      s->finished_ = true;
    }
  }
  return calls;
}

Status Recognizer::run_batch(std::span<Stream* const> batch, int frames) {
  const auto batch_size = static_cast<std::int64_t>(batch.size());
  Tensor features = Tensor::uninitialized(DType::kF32, {batch_size, frames, feature_dim_});
  std::vector<int> slots;
  for (std::size_t b = 0; b < batch.size(); ++b) {
    const auto& chunk = batch[b]->ready_chunks_.front().features;
    std::copy(chunk.begin(), chunk.end(), features.data<float>() + b * chunk.size());
    slots.push_back(batch[b]->slot_);
  }
  VOXRT_ASSIGN_OR_RETURN(std::vector<Tensor> outputs,
                         pool_->run_batch(*context_, slots, std::vector<Tensor>{features}));
  const Tensor& log_probs = outputs[0];
  if (log_probs.rank() != 3 || log_probs.dim(0) != batch_size || log_probs.dim(2) != vocab_size()) {
    return invalid_argument("log_probs is ", dims_to_string(log_probs.dims()), ", expected [",
                            batch_size, ", T, ", vocab_size(), "]");
  }
  const auto out_frames = static_cast<int>(log_probs.dim(1));
  for (std::size_t b = 0; b < batch.size(); ++b) {
    Stream* s = batch[b];
    const Stream::Chunk chunk = std::move(s->ready_chunks_.front());
    s->ready_chunks_.pop_front();
    int valid = out_frames;
    if (chunk.valid_frames >= 0) {
      // The padded last chunk: output frame j depends on input frames <= subsampling*j.
      valid = std::min(out_frames, (chunk.valid_frames + subsampling_ - 1) / subsampling_);
    }
    VOXRT_RETURN_IF_ERROR(s->deliver(log_probs.data<float>() + b * out_frames * vocab_size(), valid,
                                     true, chunk.ends_speech));
  }
  return Status::ok();
}

// ---- Stream ----------------------------------------------------------------------------------

Stream::Stream(std::shared_ptr<Recognizer> recognizer, StreamOptions options, int slot)
    : recognizer_(std::move(recognizer)), options_(std::move(options)), slot_(slot) {}

Stream::~Stream() {
  if (slot_ >= 0) (void)recognizer_->pool_->release(slot_);
}

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
  const int chunk_frames = recognizer_->chunk_frames_;
  std::vector<float> popped;
  features_->pop_frames(popped, features_->frames_ready());
  frame_buffer_.insert(frame_buffer_.end(), popped.begin(), popped.end());
  const auto& features = recognizer_->feature_config_;
  const long long shift_samples = features.frame_shift_samples();
  const long long tail_samples = features.frame_length_samples() - shift_samples;
  auto queue = [&](Chunk c, bool last) {
    frames_collected_ += static_cast<long long>(c.features.size()) / dim;
    unrouted_.push_back(
        PendingChunk{std::move(c), frames_collected_ * shift_samples + tail_samples, last});
  };
  const std::size_t chunk_values = static_cast<std::size_t>(chunk_frames * dim);
  while (frame_buffer_.size() >= chunk_values) {
    Chunk c;
    c.features.assign(frame_buffer_.begin(),
                      frame_buffer_.begin() + static_cast<std::ptrdiff_t>(chunk_values));
    frame_buffer_.erase(frame_buffer_.begin(),
                        frame_buffer_.begin() + static_cast<std::ptrdiff_t>(chunk_values));
    queue(std::move(c), flush && frame_buffer_.empty());
  }
  if (flush) {
    const int valid = static_cast<int>(frame_buffer_.size()) / dim;
    if (valid > 0) {
      // Pad with zero frames (the normalised mean) to a multiple of the subsampling.
      const int sub = recognizer_->subsampling_;
      const int padded = (std::max(valid, recognizer_->min_chunk_frames_) + sub - 1) / sub * sub;
      Chunk c;
      c.features = std::move(frame_buffer_);
      c.features.resize(static_cast<std::size_t>(padded * dim), 0.0f);
      c.valid_frames = valid;
      queue(std::move(c), true);
    }
    frame_buffer_.clear();
  }
  route_ready();
}

long long Stream::decided_until_sample() const {
  constexpr long long kAll = std::numeric_limits<long long>::max();
  long long until = kAll;
  // The energy VAD runs inside accept_pcm, so it has always heard everything received.
  if (silero_segmenter_ && !silero_done_) until = silero_segmenter_->samples_scored();
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
  while (!vad_events_.empty() && (last || vad_events_.front().sample <= end_sample)) {
    if (vad_events_.front().kind == audio::VadEvent::Kind::kSpeechStart) {
      in_speech_ = true;
      speech_in_chunk = true;
    } else {
      in_speech_ = false;
      c.ends_speech = true;
      hangover_left_ = recognizer_->config_.vad_hangover_chunks;
    }
    vad_events_.pop_front();
  }
  bool hangover = false;
  if (!speech_in_chunk && !in_speech_ && hangover_left_ > 0) {
    hangover = true;
    --hangover_left_;
  }
  if (wake_ && !awake_) {
    if (wake_->fired() && wake_->fired_at_sample() <= end_sample) {
      awake_ = true;
      ++wake_detections_;
      last_wake_sample_ = wake_->fired_at_sample();
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
  if (!gated || speech_in_chunk || in_speech_ || hangover) {
    while (!preroll_.empty()) {
      ready_chunks_.push_back(std::move(preroll_.front()));
      preroll_.pop_front();
    }
    ready_chunks_.push_back(std::move(c));
    return;
  }
  preroll_.push_back(std::move(c));
  while (static_cast<int>(preroll_.size()) > recognizer_->config_.vad_preroll_chunks ||
         (last && !preroll_.empty())) {
    // Silence costs no model work: the decoder sees blanks, so times and endpoints stay right.
    preroll_.front().run_model = false;
    ready_chunks_.push_back(std::move(preroll_.front()));
    preroll_.pop_front();
    ++chunks_skipped_;
  }
}

Status Stream::deliver_blanks(const Chunk& chunk) {
  const int dim = recognizer_->feature_dim_;
  int frames = static_cast<int>(chunk.features.size()) / dim;
  if (chunk.valid_frames >= 0) frames = chunk.valid_frames;
  const int out_frames = (frames + recognizer_->subsampling_ - 1) / recognizer_->subsampling_;
  const int vocab = recognizer_->vocab_size();
  std::vector<float> blanks(static_cast<std::size_t>(out_frames * vocab), kImpossibleLogProb);
  for (int t = 0; t < out_frames; ++t) {
    blanks[static_cast<std::size_t>(t * vocab + recognizer_->vocabulary_->blank_id())] = 0.0f;
  }
  return deliver(blanks.data(), out_frames, false, chunk.ends_speech);
}

Status Stream::deliver(const float* log_probs, int frames, bool from_model, bool vad_ended) {
  if (from_model) ++chunks_run_;
  if (frames <= 0) return Status::ok();
  const decode::LogProbView view{log_probs, frames, recognizer_->vocab_size()};
  long long utterance_frames = 0, trailing_blank = 0;
  bool has_tokens = false;
  if (greedy_) {
    VOXRT_RETURN_IF_ERROR(greedy_->accept(view));
    utterance_frames = greedy_->utterance_frames();
    trailing_blank = greedy_->trailing_blank_frames();
    has_tokens = greedy_->has_tokens();
  } else {
    VOXRT_RETURN_IF_ERROR(beam_->accept(view));
    utterance_frames = beam_->utterance_frames();
    trailing_blank = beam_->trailing_blank_frames();
    has_tokens = beam_->has_tokens();
  }
  const bool vad_end = vad_ended && recognizer_->config_.endpoint.use_vad_endpoint && has_tokens;
  const auto reason =
      recognizer_->endpoint_->detect(utterance_frames, trailing_blank, has_tokens, vad_end);
  if (reason != decode::EndpointReason::kNone) {
    finish_utterance(reason);
  } else {
    emit_partial();
  }
  return Status::ok();
}

void Stream::emit_partial() {
  decode::DecodingResult partial = greedy_ ? greedy_->partial() : beam_->partial();
  if (partial.text == last_partial_) return;
  last_partial_ = partial.text;
  partial.is_final = false;
  results_.push_back(StreamResult{std::move(partial), utterance_, decode::EndpointReason::kNone});
}

void Stream::finish_utterance(decode::EndpointReason reason) {
  decode::DecodingResult final_result = greedy_ ? greedy_->finalize() : beam_->finalize();
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
  if (greedy_) {
    greedy_->reset_utterance();
  } else {
    beam_->reset_utterance();
  }
  last_partial_.clear();
}

std::vector<StreamResult> Stream::take_results() {
  std::vector<StreamResult> out;
  out.swap(results_);
  return out;
}

}  // namespace voxrt::stream
