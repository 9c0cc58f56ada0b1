#include "audio/energy_vad.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace voxrt::audio {
namespace {

constexpr double kSilenceDbfs = -120.0;  // digital silence, instead of -inf

}  // namespace

Status EnergyVadConfig::validate() const {
  if (sample_rate_hz < 1000 || frame_ms < 1 || frame_samples() < 1) {
    return invalid_argument("energy VAD ", to_string(),
                            ": expected sample_rate_hz >= 1000 and frame_ms >= 1");
  }
  if (!(threshold_db > 0) || !(hysteresis_db >= 0) || hysteresis_db >= threshold_db) {
    return invalid_argument("energy VAD ", to_string(),
                            ": expected threshold_db > 0 and 0 <= hysteresis_db < threshold_db");
  }
  if (min_speech_ms < 0 || min_silence_ms < 0 || max_onset_gap_ms < 0 ||
      !(noise_floor_rise_db_per_s >= 0)) {
    return invalid_argument("energy VAD ", to_string(),
                            ": expected non-negative min_speech_ms, min_silence_ms and rise rate");
  }
  return Status::ok();
}

std::string EnergyVadConfig::to_string() const {
  std::ostringstream out;
  out << "{sample_rate_hz=" << sample_rate_hz << " frame_ms=" << frame_ms
      << " threshold_db=" << threshold_db << " hysteresis_db=" << hysteresis_db
      << " min_energy_dbfs=" << min_energy_dbfs
      << " noise_floor_rise_db_per_s=" << noise_floor_rise_db_per_s
      << " min_speech_ms=" << min_speech_ms << " max_onset_gap_ms=" << max_onset_gap_ms
      << " min_silence_ms=" << min_silence_ms << "}";
  return out.str();
}

Expected<EnergyVad> EnergyVad::create(const EnergyVadConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  return EnergyVad(config);
}

void EnergyVad::reset() {
  pending_.clear();
  frames_done_ = 0;
  noise_floor_db_ = kSilenceDbfs;
  floor_initialised_ = false;
  in_speech_ = false;
  speech_run_frames_ = 0;
  onset_gap_frames_ = 0;
  silence_run_frames_ = 0;
  run_start_frame_ = 0;
  last_speech_frame_ = 0;
}

void EnergyVad::process_frame(double energy_dbfs, std::vector<VadEvent>& events) {
  const std::int64_t frame = frames_done_++;
  const std::int64_t frame_samples = config_.frame_samples();
  if (!floor_initialised_) {
    noise_floor_db_ = energy_dbfs;
    floor_initialised_ = true;
  }
  const double rise_per_frame = config_.noise_floor_rise_db_per_s * config_.frame_ms / 1000.0;
  noise_floor_db_ = std::min(energy_dbfs, noise_floor_db_ + rise_per_frame);

  const double needed_db =
      noise_floor_db_ + config_.threshold_db - (in_speech_ ? config_.hysteresis_db : 0.0);
  const bool loud = energy_dbfs >= needed_db && energy_dbfs >= config_.min_energy_dbfs;
  const int min_speech_frames = std::max(1, config_.min_speech_ms / config_.frame_ms);
  const int min_silence_frames = std::max(1, config_.min_silence_ms / config_.frame_ms);

  if (!in_speech_) {
    if (loud) {
      if (speech_run_frames_ == 0) run_start_frame_ = frame;
      onset_gap_frames_ = 0;
      if (++speech_run_frames_ >= min_speech_frames) {
        in_speech_ = true;
        silence_run_frames_ = 0;
        last_speech_frame_ = frame;
        events.push_back({VadEvent::Kind::kSpeechStart, run_start_frame_ * frame_samples});
      }
    } else if (speech_run_frames_ > 0 &&
               ++onset_gap_frames_ * config_.frame_ms > config_.max_onset_gap_ms) {
      speech_run_frames_ = 0;
      onset_gap_frames_ = 0;
    }
    return;
  }
  if (loud) {
    silence_run_frames_ = 0;
    last_speech_frame_ = frame;
    return;
  }
  if (++silence_run_frames_ >= min_silence_frames) {
    in_speech_ = false;
    speech_run_frames_ = 0;
    onset_gap_frames_ = 0;
    events.push_back({VadEvent::Kind::kSpeechEnd, (last_speech_frame_ + 1) * frame_samples});
  }
}

std::int64_t EnergyVad::decided_until_sample() const {
  const std::int64_t frame_samples = config_.frame_samples();
  // In speech, an end would be dated one past the last loud frame; out of it, a start at the
  // first frame of the onset being confirmed.
  if (in_speech_) return (last_speech_frame_ + 1) * frame_samples;
  if (speech_run_frames_ > 0) return run_start_frame_ * frame_samples;
  return frames_done_ * frame_samples;
}

void EnergyVad::accept_waveform(std::span<const float> samples, std::vector<VadEvent>& events) {
  const std::size_t frame_samples = static_cast<std::size_t>(config_.frame_samples());
  std::size_t used = 0;
  while (used < samples.size()) {
    const std::size_t take = std::min(frame_samples - pending_.size(), samples.size() - used);
    pending_.insert(pending_.end(), samples.begin() + static_cast<std::ptrdiff_t>(used),
                    samples.begin() + static_cast<std::ptrdiff_t>(used + take));
    used += take;
    if (pending_.size() < frame_samples) break;
    double energy = 0.0;
    for (float s : pending_) energy += static_cast<double>(s) * s;
    energy /= static_cast<double>(frame_samples);
    const double dbfs =
        energy > 0 ? std::max(10.0 * std::log10(energy), kSilenceDbfs) : kSilenceDbfs;
    pending_.clear();
    process_frame(dbfs, events);
  }
}

void EnergyVad::input_finished(std::vector<VadEvent>& events) {
  if (in_speech_) {
    in_speech_ = false;
    events.push_back(
        {VadEvent::Kind::kSpeechEnd, (last_speech_frame_ + 1) * config_.frame_samples()});
  }
  pending_.clear();
}

Expected<std::vector<SpeechSegment>> detect_speech(const EnergyVadConfig& config,
                                                   std::span<const float> samples) {
  VOXRT_ASSIGN_OR_RETURN(EnergyVad vad, EnergyVad::create(config));
  std::vector<VadEvent> events;
  vad.accept_waveform(samples, events);
  vad.input_finished(events);
  return segments_from_events(events);
}

std::vector<SpeechSegment> segments_from_events(std::span<const VadEvent> events) {
  std::vector<SpeechSegment> segments;
  for (const VadEvent& event : events) {
    if (event.kind == VadEvent::Kind::kSpeechStart) {
      segments.push_back({event.sample, event.sample});
    } else if (!segments.empty()) {
      segments.back().end_sample = event.sample;
    }
  }
  return segments;
}

}  // namespace voxrt::audio
