// Wake word: the openWakeWord chain run by voxrt's engine. Every 1280 samples (80 ms at 16 kHz):
//   melspectrogram engine on the last 1760 samples (480 of the previous chunk + 1280 new, int16
//   scale) -> 8 frames of 32 bins, scaled x / 10 + 2 as openWakeWord does;
//   embedding engine on the last 76 mel frames [1, 76, 32, 1] -> one 96-dim embedding;
//   head engine (e.g. hey_jarvis) on the last N embeddings [1, N, 96] (N from the engine) -> score.
// As in openWakeWord's AudioFeatures the mel buffer starts as 76 frames of ones; the embedding
// history starts as zeros, and the first `warmup_predictions` scores count as 0. The stage works
// with any models of the same interface (any head taking [1, N, 96]).
#pragma once

#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "voxrt/engine.h"

namespace voxrt::stream {

struct WakeWordConfig {
  // Engine files of the three models.
  std::string melspectrogram_engine;
  std::string embedding_engine;
  std::string head_engine;
  float threshold = 0.5f;
  int warmup_predictions = 5;
  // After the utterance that follows the wake word ends (an endpoint with text), the stream
  // waits for the wake word again; false: it stays awake to its end.
  bool rearm_after_utterance = true;
  int threads = 1;

  Status validate() const;
  std::string to_string() const;
};

// The three engines, shared by every stream's detector (calls are serialised by the caller, as
// for the Recognizer's acoustic context).
class WakeWordModels {
 public:
  static constexpr int kChunkSamples = 1280;
  static constexpr int kMelContextSamples = 480;
  static constexpr int kMelBins = 32;
  static constexpr int kMelFramesPerChunk = 8;
  static constexpr int kEmbeddingWindowFrames = 76;
  static constexpr int kEmbeddingDim = 96;

  static Expected<std::shared_ptr<WakeWordModels>> load(const WakeWordConfig& config);
  const WakeWordConfig& config() const { return config_; }
  int head_window() const { return head_window_; }
  long long engine_calls() const { return engine_calls_; }

 private:
  friend class WakeWordDetector;
  WakeWordModels() = default;
  Expected<std::vector<Tensor>> run(int which, std::vector<Tensor> inputs);

  WakeWordConfig config_;
  std::shared_ptr<const Engine> engines_[3];
  std::unique_ptr<ExecutionContext> contexts_[3];
  int head_window_ = 16;
  long long engine_calls_ = 0;
};

// One stream's wake-word state: samples in [-1, 1) at 16 kHz in, scores out.
class WakeWordDetector {
 public:
  // `start_sample`: the stream sample of the first sample it will be given.
  explicit WakeWordDetector(std::shared_ptr<WakeWordModels> models, std::int64_t start_sample = 0);

  void accept_waveform(std::span<const float> samples);
  bool has_chunk() const {
    return pending_.size() >= static_cast<std::size_t>(WakeWordModels::kChunkSamples);
  }
  // Scores the next 1280-sample chunk; sets fired() once a score reaches the threshold.
  Status process_chunk();
  bool fired() const { return fired_; }
  // One past the last sample of the chunk whose score fired (valid when fired()).
  std::int64_t fired_at_sample() const { return fired_at_sample_; }
  float last_score() const { return last_score_; }
  // The highest score so far; scoring stops once the wake word fires (the Recognizer then
  // feeds it no more audio), so after firing this is the score that fired.
  float max_score() const { return max_score_; }
  std::int64_t samples_scored() const {
    return start_sample_ + chunks_ * WakeWordModels::kChunkSamples;
  }

 private:
  std::shared_ptr<WakeWordModels> models_;
  std::vector<float> pending_;
  std::vector<float> previous_tail_;  // the previous chunk's last 480 samples
  std::deque<std::vector<float>> mel_frames_;
  std::deque<std::vector<float>> embeddings_;
  std::int64_t start_sample_ = 0;
  std::int64_t chunks_ = 0;
  bool fired_ = false;
  std::int64_t fired_at_sample_ = -1;
  float last_score_ = 0.0f;
  float max_score_ = 0.0f;
};

}  // namespace voxrt::stream
