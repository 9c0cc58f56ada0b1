// Speech recognition on top of the engine: the family-independent stream driver. A Recognizer
// loads a model of one family (model_family.h: an engine with its contract in the metadata, or an
// engine bundle) and runs its streams: audio in (any size, any rate, resampled), features, VAD
// and wake-word gating, chunking, batching across streams, endpointing and results out. The
// family (ctc/, transducer/) runs a batch of chunks and keeps each stream's model state and
// search. A stream's text does not depend on the other streams in its batch. Only one thread
// may advance a given stream at a time (STYLE.md 11).
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "audio/energy_vad.h"
#include "audio/feature_extractor.h"
#include "audio/resampler.h"
#include "audio/silero_vad.h"
#include "decode/ctc_prefix_beam.h"
#include "decode/decoding_choices.h"
#include "decode/endpoint.h"
#include "decode/transducer_search.h"
#include "stream/encoder_decoder/decoding_options.h"
#include "stream/encoder_decoder/stream_choices.h"
#include "stream/model_family.h"
#include "stream/silero_vad_model.h"
#include "stream/wake_word.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

using DecoderKind = decode::DecoderKind;
using DecodingChoices = decode::DecodingChoices;
enum class VadKind { kOff, kEnergy, kSilero };
// What a stream's model state does at an endpoint: back to zeros, as at the stream's start, so
// each utterance is recognised as if it had been cut out of the stream (a recurrent model
// trained on short utterances drifts on a long stream otherwise), or carried on (a model family
// that wants the history).
enum class StateAtEndpoint { kReset, kCarry };

// What a stream decodes with, resolved from its options, the recognizer and the model
// (Recognizer::decoding_for); the stream's model family builds its search from it.
struct ResolvedDecoding {
  DecoderKind decoder = DecoderKind::kGreedy;
  // CTC prefix beam search.
  decode::BeamSearchConfig beam;
  // Transducer searches (the decoding choices' beam_width is the modified beam search's too).
  decode::TransducerSearchConfig transducer;
  bool use_lm = false;
  bool lexicon_only = false;
  float hotword_bonus = 1.5f;
  // encoder_decoder models: decode with timestamp tokens (DecodingChoices::timestamps).
  bool timestamps = false;
};

struct RecognizerConfig {
  // An engine file (voxrt build --onnx) or an engine bundle folder (voxrt build --model-dir).
  std::string engine_path;
  // Folder that metadata file names (SentencePiece model) are relative to; default: the engine's.
  std::string model_dir;
  int max_streams = 256;
  // Streams per engine call; 0: the largest batch the engine's profiles accept, at most
  // kDefaultMaxBatch. A value above what the profiles accept is refused.
  int max_batch = 0;
  static constexpr int kDefaultMaxBatch = 32;
  int threads = 1;
  DecoderKind decoder = DecoderKind::kGreedy;
  // CTC prefix beam search's pruning, and the built-in defaults of those in `decoding`.
  decode::BeamSearchConfig beam;
  // Transducer searches: symbols per frame; beam_width is the modified beam search's default
  // (decoding.beam_width, where set, is both families' beam).
  decode::TransducerSearchConfig transducer;
  // Choices for every stream, over the model's tuned values; a stream's own win.
  DecodingChoices decoding;
  // encoder_decoder (Whisper) models: the task, conditioning on previous text, the initial
  // prompt and the temperature fallback (the other families ignore it).
  EncoderDecoderOptions encoder_decoder;
  std::string lm_path;  // ARPA; CTC beam search only
  VadKind vad = VadKind::kEnergy;
  audio::EnergyVadConfig energy_vad;
  // Silero VAD v5 engine (stream/silero_vad_model.h says how it is built); vad == kSilero only.
  std::string silero_engine_path;
  audio::SileroVadConfig silero_vad;
  // Optional wake-word stage: until it fires, a stream's audio costs no acoustic-model work
  // and yields no text; once it fires the stream stays awake.
  std::optional<WakeWordConfig> wake_word;
  // Whole chunks before the one that holds the VAD's speech start that still go to the model.
  // 0: the chunk holding the start is the first (routing waits until the VAD has dated the
  // start, speech_pad_ms before Silero's first speech window or at the energy VAD's first loud
  // frame). Unset: the model's voxrt.vad_preroll_chunks, else 0. The default model version 2
  // (fresh states at each endpoint, trained on utterances with silence before them) measured
  // better with 1; each pre-roll chunk is a chunk of model work per onset
  // (docs/audio_and_decoding.md).
  std::optional<int> vad_preroll_chunks;
  // Audio after the VAD's end of speech that still goes through the model before the VAD's
  // endpoint is taken: the model emits a word's last units after it has heard them. Unset: the
  // model's voxrt.endpoint_tail_ms, else 300.
  std::optional<int> vad_endpoint_tail_ms;
  // Unset: the model's voxrt.state_at_endpoint (reset | carry), else reset.
  std::optional<StateAtEndpoint> state_at_endpoint;
  decode::EndpointConfig endpoint;
  // Growing-window partials (families that decode a filling chunk: encoder_decoder's 30 s
  // windows): every this many ms of new audio in the chunk that is filling, its audio so far is
  // decoded again for the partial result; the final is unchanged (the whole chunk, decoded once
  // it is complete). 0: partials only from complete chunks. voxrt serve sets it for live streams
  // (--whisper-partial-ms); other families ignore it.
  int partial_interval_ms = 0;

  Status validate() const;
  std::string to_string() const;
};

struct StreamOptions {
  int sample_rate_hz = 16000;
  // Phrases to boost (beam search); Recognizer::normalise_hotword says what the units need.
  std::vector<std::string> hotwords;
  // Per-stream choices over the recognizer's: the decoder, decoding without the recognizer's LM
  // (false), and the beam settings.
  std::optional<DecoderKind> decoder;
  std::optional<bool> use_lm;
  DecodingChoices decoding;
  // encoder_decoder (Whisper) models: the stream's initial prompt and temperatures over the
  // recognizer's (RecognizerConfig::encoder_decoder); other families refuse them.
  WhisperStreamChoices whisper;
  // false: no growing-window partials for this stream (RecognizerConfig::partial_interval_ms),
  // for a caller that reads only the final (the server's uploads).
  bool filling_partials = true;
};

struct StreamResult {
  decode::DecodingResult result;  // result.is_final tells partial from final
  int utterance = 0;
  decode::EndpointReason endpoint = decode::EndpointReason::kNone;
};

class Recognizer;

class Stream {
 public:
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Samples in [-1, 1) at the stream's sample rate, any count.
  Status accept_pcm(std::span<const float> samples);
  // No more audio: the rest is decoded and a final result follows.
  Status input_finished();
  // Results produced since the last call (partials when the text changed, finals at endpoints).
  std::vector<StreamResult> take_results();
  bool finished() const { return finished_; }
  // Feature chunks waiting for the model, or (Silero, wake word) for the front-end models to
  // decide whether they need it: advance() has work for this stream.
  std::size_t chunks_pending() const { return ready_chunks_.size() + unrouted_.size(); }
  double audio_seconds() const {
    return static_cast<double>(samples_in_) / options_.sample_rate_hz;
  }
  // Engine chunks this stream ran, and chunks the VAD kept away from the model.
  long long chunks_run() const { return chunks_run_; }
  long long chunks_skipped() const { return chunks_skipped_; }
  // Wake-word state (always awake without a wake-word stage).
  bool awake() const { return awake_; }
  // The highest wake-word score so far (scoring pauses while the stream is awake).
  float wake_word_max_score() const {
    return std::max(wake_score_before_, wake_ ? wake_->max_score() : 0.0f);
  }
  // Times the wake word fired (it re-arms after each utterance unless configured not to).
  int wake_word_detections() const { return wake_detections_; }
  // Stream sample (at the model rate) where the wake word last fired, -1 if it never did.
  std::int64_t wake_word_sample() const { return last_wake_sample_; }

 private:
  friend class Recognizer;
  // A chunk of feature frames in stream order: run through the model, or (silence under the
  // VAD) delivered to the decoder as blank frames without model work.
  struct Chunk {
    std::vector<float> features;
    bool run_model = true;
    // The VAD's end of speech fell inside this chunk: endpoint after decoding it.
    bool ends_speech = false;
    // Frames of the stream's last chunk that hold audio not consumed before (the rest is
    // padding); -1: a whole chunk, which consumes shift_frames.
    int valid_frames = -1;
    // The stream's index of the feature frame in features[0] (frame k starts at sample
    // k * frame shift).
    long long first_frame = 0;
  };

  // A chunk waiting for the VAD (or the wake word) to have heard up to its end sample.
  struct PendingChunk {
    Chunk chunk;
    long long end_sample = 0;
    bool last = false;
  };

  Stream(std::shared_ptr<Recognizer> recognizer, StreamOptions options);
  void collect_chunks(bool flush);
  // Routes the pending chunks that the VAD and wake word have decided about.
  void route_ready();
  void route(Chunk c, long long end_sample, bool last);
  long long decided_until_sample() const;
  // Replaces the chunk's feature frames that end at or before `sample` with the silence frame.
  void silence_frames_before(Chunk& chunk, long long sample) const;
  // Output frames of a chunk (its valid_frames, or shift_frames) after subsampling.
  int output_frames(const Chunk& chunk) const;
  // After the search took a chunk's frames: endpoint rules, then a final or a partial.
  void after_frames(int frames, bool vad_ended);
  Status deliver_blanks(const Chunk& chunk);
  void emit_partial();
  void finish_utterance(decode::EndpointReason reason);
  // Whether the chunk that is filling is due a partial decode: `interval_frames` new frames
  // since the last one, nothing of the stream's waiting, and (with a VAD) speech heard.
  bool filling_partial_due(int interval_frames) const;

  std::shared_ptr<Recognizer> recognizer_;
  StreamOptions options_;
  // The family's model state (slot) and search; released before the recognizer.
  std::unique_ptr<FamilyStream> model_;
  std::optional<audio::StreamingResampler> resampler_;
  std::optional<audio::StreamingFeatureExtractor> features_;
  std::optional<audio::EnergyVad> vad_;
  std::vector<float> resampled_;
  std::vector<float> frame_buffer_;  // features not yet in a chunk
  std::deque<Chunk> ready_chunks_;
  std::deque<Chunk> preroll_;  // chunks held while the VAD hears silence
  std::deque<PendingChunk> unrouted_;
  long long frames_collected_ = 0;
  // The filling chunk's last partial decode: the chunk (by frames_collected_ at its start) and
  // its frames then.
  long long partial_chunk_start_ = -1;
  int partial_chunk_frames_ = 0;
  std::optional<audio::SileroFramer> silero_framer_;
  std::optional<audio::SpeechProbabilitySegmenter> silero_segmenter_;
  std::vector<float> silero_state_;
  bool silero_done_ = false;
  std::optional<WakeWordDetector> wake_;
  bool awake_ = true;
  int wake_detections_ = 0;
  std::int64_t last_wake_sample_ = -1;
  float wake_score_before_ = 0.0f;  // best score of the detectors before the last re-arm
  std::deque<audio::VadEvent> vad_events_;
  std::vector<audio::VadEvent> new_vad_events_;
  long long frames_routed_ = 0;
  bool in_speech_ = false;
  // Stream sample (model rate) at which the VAD's pending endpoint is taken, -1: none pending.
  long long vad_endpoint_at_sample_ = -1;
  bool input_done_ = false;
  bool finished_ = false;
  int utterance_ = 0;
  std::string last_partial_;
  std::vector<StreamResult> results_;
  long long samples_in_ = 0;
  long long model_rate_samples_ = 0;
  long long chunks_run_ = 0;
  long long chunks_skipped_ = 0;
};

class Recognizer : public std::enable_shared_from_this<Recognizer> {
 public:
  static Expected<std::shared_ptr<Recognizer>> create(const RecognizerConfig& config);

  Expected<std::unique_ptr<Stream>> open_stream(const StreamOptions& options = {});
  // What a stream opened with `options` would decode with (errors as open_stream's).
  Expected<ResolvedDecoding> decoding_for(const StreamOptions& options = {}) const;
  // A hotword phrase as the model's units need it (Vocabulary::normalise_phrase), or an error
  // that names the phrase and the text the units cannot spell.
  Expected<std::string> normalise_hotword(std::string_view phrase) const;
  // Whether the model's streams can decode with the recognizer's LM (config().lm_path).
  bool has_lm() const { return family_->has_lm(); }
  // Runs every chunk that the given streams have ready, in batches of up to max_batch, until
  // none is left; returns the number of engine calls.
  Expected<int> advance(std::span<Stream* const> streams);

  // The config with the values resolved at creation (max_batch: the family's streams per call).
  const RecognizerConfig& config() const { return config_; }
  const audio::FeatureConfig& feature_config() const { return family_->feature_config(); }
  int chunk_frames() const { return family_->chunk_layout().chunk_frames; }
  int subsampling() const { return family_->chunk_layout().subsampling; }
  // The settings resolved from the config and the model's metadata.
  StateAtEndpoint state_at_endpoint() const { return state_at_endpoint_; }
  int vad_endpoint_tail_ms() const { return vad_endpoint_tail_ms_; }
  int vad_preroll_chunks() const { return vad_preroll_chunks_; }
  const decode::TimeBase& time_base() const { return family_->time_base(); }
  int vocab_size() const { return family_->vocab_size(); }
  int streams_open() const { return family_->streams_open(); }
  // Whether a stream's hotwords need the beam decoder (CTC) or work with greedy search too
  // (transducer).
  bool hotwords_need_beam_search() const { return family_->hotwords_need_beam_search(); }
  // The model family's name ("ctc_streaming", "transducer", ...).
  std::string_view model_family() const { return family_->name(); }
  // Where the engine runs (it was built for one target; voxrt build --device).
  DeviceKind engine_device() const;
  // Engine calls of the front-end models so far (0 without them).
  long long vad_engine_calls() const { return silero_ ? silero_->engine_calls() : 0; }
  long long vad_windows_run() const { return silero_ ? silero_->windows_run() : 0; }
  long long wake_word_engine_calls() const {
    return wake_models_ ? wake_models_->engine_calls() : 0;
  }

 private:
  friend class Stream;
  Recognizer() = default;
  Status run_batch(std::span<Stream* const> batch, int frames);
  // Partial decodes of the filling chunks that are due (growing-window partials).
  Status run_partials(std::span<Stream* const> streams);
  const ChunkLayout& layout() const { return family_->chunk_layout(); }
  // Wake word (per stream) and Silero VAD (batched across streams) on the audio received so far.
  Status run_front_end(std::span<Stream* const> streams);

  RecognizerConfig config_;
  std::shared_ptr<ModelFamily> family_;
  std::shared_ptr<const audio::FrameFeatureComputer> feature_computer_;
  DecodingChoices model_decoding_;  // the model's voxrt.decoding.* values
  std::optional<decode::EndpointDetector> endpoint_;
  std::shared_ptr<SileroVadModel> silero_;
  std::shared_ptr<WakeWordModels> wake_models_;
  int feature_dim_ = 0;
  StateAtEndpoint state_at_endpoint_ = StateAtEndpoint::kReset;
  int vad_endpoint_tail_ms_ = 300;
  int vad_preroll_chunks_ = 0;
  // config_.partial_interval_ms in feature frames; 0: no growing-window partials.
  int partial_interval_frames_ = 0;
};

}  // namespace voxrt::stream
