// A streaming energy voice-activity detector: frame energy against an adaptive noise floor, with
// hysteresis in level (start above floor + threshold, stay above floor + threshold - hysteresis)
// and in time (min_speech_ms to start, min_silence_ms to end). Cheap enough to gate the acoustic
// model on every stream.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::audio {

struct EnergyVadConfig {
  int sample_rate_hz = 16000;
  int frame_ms = 10;
  // Speech starts when a frame is this far above the noise floor...
  double threshold_db = 12.0;
  // ...and continues while frames stay above floor + threshold - hysteresis.
  double hysteresis_db = 4.0;
  // Frames quieter than this (dB relative to full scale) are never speech.
  double min_energy_dbfs = -50.0;
  // The floor follows quieter frames down at once and rises at most this fast, so it tracks the
  // minima between words rather than the speech itself.
  double noise_floor_rise_db_per_s = 3.0;
  int min_speech_ms = 100;
  // Quiet gaps up to this long do not break the run of loud frames that starts speech, so a
  // fricative onset followed by a stop closure ("sp...") dates the start from the fricative.
  int max_onset_gap_ms = 80;
  int min_silence_ms = 300;

  Status validate() const;
  std::string to_string() const;
  int frame_samples() const { return sample_rate_hz * frame_ms / 1000; }
};

struct VadEvent {
  enum class Kind : std::uint8_t { kSpeechStart, kSpeechEnd };
  Kind kind;
  // Stream sample index: the first speech sample (start) or one past the last (end).
  std::int64_t sample;
};

// A speech segment [start_sample, end_sample) built from start/end event pairs.
struct SpeechSegment {
  std::int64_t start_sample;
  std::int64_t end_sample;
};

// Pairs start/end events (any VAD's) into segments; an end without a start is ignored.
std::vector<SpeechSegment> segments_from_events(std::span<const VadEvent> events);

class EnergyVad {
 public:
  static Expected<EnergyVad> create(const EnergyVadConfig& config);

  // Samples in [-1, 1], any count; appends the events they complete to `events`.
  void accept_waveform(std::span<const float> samples, std::vector<VadEvent>& events);
  // End of stream: closes an open speech segment.
  void input_finished(std::vector<VadEvent>& events);
  void reset();

  bool in_speech() const { return in_speech_; }
  // Every event dated before this sample has been reported: one found later (an onset still
  // being confirmed, the end of speech after min_silence_ms) is dated at or after it. So what
  // the VAD says about audio before it does not depend on how the audio was cut into pieces.
  std::int64_t decided_until_sample() const;
  double noise_floor_dbfs() const { return noise_floor_db_; }
  const EnergyVadConfig& config() const { return config_; }

 private:
  explicit EnergyVad(const EnergyVadConfig& config) : config_(config) { reset(); }
  void process_frame(double energy_dbfs, std::vector<VadEvent>& events);

  EnergyVadConfig config_;
  std::vector<float> pending_;  // samples of the frame being filled
  std::int64_t frames_done_ = 0;
  double noise_floor_db_ = 0.0;
  bool floor_initialised_ = false;
  bool in_speech_ = false;
  int speech_run_frames_ = 0;   // loud frames in the candidate onset while not in speech
  int onset_gap_frames_ = 0;    // consecutive quiet frames inside the candidate onset
  int silence_run_frames_ = 0;  // consecutive quiet frames while in speech
  std::int64_t run_start_frame_ = 0;
  std::int64_t last_speech_frame_ = 0;
};

// Runs a fresh detector over a whole clip and pairs its events into segments.
Expected<std::vector<SpeechSegment>> detect_speech(const EnergyVadConfig& config,
                                                   std::span<const float> samples);

}  // namespace voxrt::audio
