// Speech recognition on top of the engine: a Recognizer loads an engine and its model contract
// (docs/model_contract.md) from the engine metadata; Streams accept PCM of any size at any rate
// and yield partial and final results. Many streams share one Recognizer and are advanced in
// batches through the engine's state slot pool; a stream's text does not depend on the other
// streams in its batch. Only one thread may advance a given stream at a time (STYLE.md 11).
#pragma once

#include <algorithm>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "audio/energy_vad.h"
#include "audio/feature_extractor.h"
#include "audio/resampler.h"
#include "audio/silero_vad.h"
#include "decode/arpa_lm.h"
#include "decode/context_graph.h"
#include "decode/ctc_greedy.h"
#include "decode/ctc_prefix_beam.h"
#include "decode/endpoint.h"
#include "runtime/state_pool.h"
#include "stream/silero_vad_model.h"
#include "stream/wake_word.h"
#include "voxrt/builder.h"
#include "voxrt/engine.h"

namespace voxrt::stream {

enum class DecoderKind { kGreedy, kBeam };
enum class VadKind { kOff, kEnergy, kSilero };

struct RecognizerConfig {
  std::string engine_path;
  // Folder that metadata file names (SentencePiece model) are relative to; default: the engine's.
  std::string model_dir;
  int max_streams = 256;
  // Streams per engine call.
  int max_batch = 32;
  int threads = 1;
  DecoderKind decoder = DecoderKind::kGreedy;
  decode::BeamSearchConfig beam;
  std::string lm_path;  // ARPA; beam search only
  VadKind vad = VadKind::kEnergy;
  audio::EnergyVadConfig energy_vad;
  // Silero VAD v5 engine (stream/silero_vad_model.h says how it is built); vad == kSilero only.
  std::string silero_engine_path;
  audio::SileroVadConfig silero_vad;
  // Optional wake-word stage: until it fires, a stream's audio costs no acoustic-model work
  // and yields no text; once it fires the stream stays awake.
  std::optional<WakeWordConfig> wake_word;
  // Chunks kept while the VAD hears silence, so a word's onset reaches the model.
  int vad_preroll_chunks = 1;
  // Chunks still sent after the VAD's end of speech, so a word's tail reaches the model.
  int vad_hangover_chunks = 1;
  decode::EndpointConfig endpoint;

  Status validate() const;
  std::string to_string() const;
};

struct StreamOptions {
  int sample_rate_hz = 16000;
  std::vector<std::string> hotwords;
  float hotword_bonus = 1.5f;  // per unit, beam search only
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
    // Frames of the stream's last chunk that hold audio (the rest is padding); -1: all.
    int valid_frames = -1;
  };

  // A chunk waiting for the VAD (or the wake word) to have heard up to its end sample.
  struct PendingChunk {
    Chunk chunk;
    long long end_sample = 0;
    bool last = false;
  };

  Stream(std::shared_ptr<Recognizer> recognizer, StreamOptions options, int slot);
  void collect_chunks(bool flush);
  // Routes the pending chunks that the VAD and wake word have decided about.
  void route_ready();
  void route(Chunk c, long long end_sample, bool last);
  long long decided_until_sample() const;
  Status deliver(const float* log_probs, int frames, bool from_model, bool vad_ended);
  Status deliver_blanks(const Chunk& chunk);
  void emit_partial();
  void finish_utterance(decode::EndpointReason reason);

  std::shared_ptr<Recognizer> recognizer_;
  StreamOptions options_;
  int slot_ = -1;
  std::optional<audio::StreamingResampler> resampler_;
  std::optional<audio::StreamingFeatureExtractor> features_;
  std::optional<audio::EnergyVad> vad_;
  std::optional<decode::GreedyCtcDecoder> greedy_;
  std::optional<decode::CtcPrefixBeamDecoder> beam_;
  std::vector<float> resampled_;
  std::vector<float> frame_buffer_;  // features not yet in a chunk
  std::deque<Chunk> ready_chunks_;
  std::deque<Chunk> preroll_;  // chunks held while the VAD hears silence
  std::deque<PendingChunk> unrouted_;
  long long frames_collected_ = 0;
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
  int hangover_left_ = 0;
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
  // Runs every chunk that the given streams have ready, in batches of up to max_batch, until
  // none is left; returns the number of engine calls.
  Expected<int> advance(std::span<Stream* const> streams);

  const RecognizerConfig& config() const { return config_; }
  const audio::FeatureConfig& feature_config() const { return feature_config_; }
  int chunk_frames() const { return chunk_frames_; }
  int subsampling() const { return subsampling_; }
  int vocab_size() const { return vocabulary_->size(); }
  int streams_open() const { return pool_->in_use(); }
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
  // Wake word (per stream) and Silero VAD (batched across streams) on the audio received so far.
  Status run_front_end(std::span<Stream* const> streams);

  RecognizerConfig config_;
  std::shared_ptr<const Engine> engine_;
  std::unique_ptr<ExecutionContext> context_;
  std::unique_ptr<StatePool> pool_;
  audio::FeatureConfig feature_config_;
  std::shared_ptr<const audio::FrameFeatureComputer> feature_computer_;
  std::shared_ptr<const decode::Vocabulary> vocabulary_;
  std::shared_ptr<const decode::ArpaLm> lm_;
  std::optional<decode::EndpointDetector> endpoint_;
  std::shared_ptr<SileroVadModel> silero_;
  std::shared_ptr<WakeWordModels> wake_models_;
  decode::TimeBase time_base_;
  int chunk_frames_ = 0;
  // The fewest frames the engine's profiles accept: a stream's last chunk is padded to it.
  int min_chunk_frames_ = 1;
  int subsampling_ = 1;
  int feature_dim_ = 0;
};

}  // namespace voxrt::stream
