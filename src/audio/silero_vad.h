// The model-free half of Silero VAD v5: cutting a stream into the model's windows and turning the
// model's per-window speech probabilities into speech start/end events. The model itself runs in
// voxrt's engine (stream/silero_vad_model.h), batched across streams.
//
// v5 takes 512 new samples at 16 kHz per call with the last 64 samples of the previous window
// prepended (input [B, 576]), as silero-vad's OnnxWrapper and vad-web's Silero class do; without
// the context the probabilities are lower and onsets at window edges are missed.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "audio/energy_vad.h"  // VadEvent
#include "voxrt/status.h"

namespace voxrt::audio {

struct SileroVadConfig {
  int sample_rate_hz = 16000;  // v5 also runs at 8 kHz; voxrt's engines are built for 16 kHz
  int window_samples = 512;
  int context_samples = 64;
  // Hysteresis: speech starts at probability >= onset and ends only below offset (silero's own
  // get_speech_timestamps uses threshold 0.5 and threshold - 0.15).
  float onset_threshold = 0.5f;
  float offset_threshold = 0.35f;
  // A candidate onset must last this long (windows at >= offset after one >= onset) to count.
  int min_speech_ms = 250;
  // Windows below offset for this long end speech. Silero's offline default is 100 ms; 300 keeps
  // short pauses inside one utterance, so a VAD endpoint does not split a sentence.
  int min_silence_ms = 300;
  // Speech starts this much before the first speech window and ends this much after the last.
  int speech_pad_ms = 30;

  Status validate() const;
  std::string to_string() const;
  int model_input_samples() const { return context_samples + window_samples; }
  std::int64_t ms_to_samples(int ms) const {
    return static_cast<std::int64_t>(ms) * sample_rate_hz / 1000;
  }
};

// Samples in, model windows out: each window is the previous window's last context_samples (zeros
// before the first) followed by window_samples new ones. The last, partial window is padded with
// zeros at input_finished().
class SileroFramer {
 public:
  explicit SileroFramer(const SileroVadConfig& config);
  void accept_waveform(std::span<const float> samples);
  void input_finished();
  bool has_window() const { return pending_.size() >= static_cast<std::size_t>(window_); }
  // Writes model_input_samples() values and advances by one window; false (nothing written)
  // when no full window is pending.
  bool pop_window(float* out);
  bool finished() const { return finished_; }
  std::int64_t samples_in() const { return samples_in_; }

 private:
  int window_ = 0;
  int context_ = 0;
  std::vector<float> context_values_;
  std::vector<float> pending_;
  std::int64_t samples_in_ = 0;
  bool finished_ = false;
};

// Probabilities in (one per window, in order), events out. Deterministic in the probabilities, so
// events do not depend on how the audio was chunked or batched.
class SpeechProbabilitySegmenter {
 public:
  static Expected<SpeechProbabilitySegmenter> create(const SileroVadConfig& config);
  void accept(float speech_probability, std::vector<VadEvent>& events);
  // End of stream after `total_samples` of audio: closes an open segment.
  void input_finished(std::int64_t total_samples, std::vector<VadEvent>& events);
  // Samples whose windows have been scored (a multiple of window_samples).
  std::int64_t samples_scored() const { return windows_ * window_; }
  // Every event dated before this sample has been reported (a later one, an onset being
  // confirmed or an end after min_silence_ms, is dated at or after it), so decisions about the
  // audio before it do not depend on how the audio was cut or batched.
  std::int64_t decided_until_sample() const;
  bool in_speech() const { return in_speech_; }

 private:
  explicit SpeechProbabilitySegmenter(const SileroVadConfig& config);

  SileroVadConfig config_;
  std::int64_t window_ = 512;
  std::int64_t windows_ = 0;
  bool in_speech_ = false;
  std::int64_t candidate_start_ = -1;  // first sample of a candidate onset, -1: none
  std::int64_t silence_start_ = -1;    // first sample of the current quiet run in speech
  std::int64_t last_end_event_ = 0;    // segments never overlap
};

// Runs the segmenter over per-window probabilities of a whole clip (tests, tools).
std::vector<SpeechSegment> segments_from_probabilities(const SileroVadConfig& config,
                                                       std::span<const float> probabilities,
                                                       std::int64_t total_samples);

}  // namespace voxrt::audio
