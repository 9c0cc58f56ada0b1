#include "audio/silero_vad.h"

#include <algorithm>
#include <sstream>

namespace voxrt::audio {

Status SileroVadConfig::validate() const {
  if (sample_rate_hz != 16000 && sample_rate_hz != 8000) {
    return invalid_argument("silero VAD ", to_string(), ": sample_rate_hz must be 16000 or 8000");
  }
  if (window_samples < 1 || context_samples < 0) {
    return invalid_argument("silero VAD ", to_string(),
                            ": expected window_samples >= 1 and context_samples >= 0");
  }
  if (!(onset_threshold > 0 && onset_threshold <= 1) || !(offset_threshold >= 0) ||
      offset_threshold > onset_threshold) {
    return invalid_argument("silero VAD ", to_string(),
                            ": expected 0 <= offset_threshold <= onset_threshold <= 1, "
                            "onset_threshold > 0");
  }
  if (min_speech_ms < 0 || min_silence_ms < 0 || speech_pad_ms < 0) {
    return invalid_argument("silero VAD ", to_string(),
                            ": expected non-negative min_speech_ms, min_silence_ms, speech_pad_ms");
  }
  return Status::ok();
}

std::string SileroVadConfig::to_string() const {
  std::ostringstream out;
  out << "{sample_rate_hz=" << sample_rate_hz << " window_samples=" << window_samples
      << " context_samples=" << context_samples << " onset_threshold=" << onset_threshold
      << " offset_threshold=" << offset_threshold << " min_speech_ms=" << min_speech_ms
      << " min_silence_ms=" << min_silence_ms << " speech_pad_ms=" << speech_pad_ms << "}";
  return out.str();
}

// ---- SileroFramer ------------------------------------------------------------------------------

SileroFramer::SileroFramer(const SileroVadConfig& config)
    : window_(config.window_samples),
      context_(config.context_samples),
      context_values_(static_cast<std::size_t>(config.context_samples), 0.0f) {}

void SileroFramer::accept_waveform(std::span<const float> samples) {
  pending_.insert(pending_.end(), samples.begin(), samples.end());
  samples_in_ += static_cast<std::int64_t>(samples.size());
}

void SileroFramer::input_finished() {
  if (finished_) return;
  finished_ = true;
  const std::size_t partial = pending_.size() % static_cast<std::size_t>(window_);
  if (partial != 0) pending_.resize(pending_.size() + static_cast<std::size_t>(window_) - partial);
}

bool SileroFramer::pop_window(float* out) {
  if (!has_window()) return false;
  std::copy(context_values_.begin(), context_values_.end(), out);
  std::copy(pending_.begin(), pending_.begin() + window_, out + context_);
  if (context_ > 0) {
    std::copy(pending_.begin() + (window_ - context_), pending_.begin() + window_,
              context_values_.begin());
  }
  pending_.erase(pending_.begin(), pending_.begin() + window_);
  return true;
}

// ---- SpeechProbabilitySegmenter ----------------------------------------------------------------

Expected<SpeechProbabilitySegmenter> SpeechProbabilitySegmenter::create(
    const SileroVadConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  return SpeechProbabilitySegmenter(config);
}

SpeechProbabilitySegmenter::SpeechProbabilitySegmenter(const SileroVadConfig& config)
    : config_(config), window_(config.window_samples) {}

void SpeechProbabilitySegmenter::accept(float p, std::vector<VadEvent>& events) {
  const std::int64_t start = windows_ * window_;
  const std::int64_t end = start + window_;
  ++windows_;
  const std::int64_t pad = config_.ms_to_samples(config_.speech_pad_ms);
  if (!in_speech_) {
    if (p >= config_.onset_threshold) {
      if (candidate_start_ < 0) candidate_start_ = start;
    } else if (p < config_.offset_threshold) {
      candidate_start_ = -1;
    }
    if (candidate_start_ >= 0 &&
        end - candidate_start_ >=
            std::max<std::int64_t>(window_, config_.ms_to_samples(config_.min_speech_ms))) {
      in_speech_ = true;
      silence_start_ = -1;
      events.push_back(
          {VadEvent::Kind::kSpeechStart, std::max(last_end_event_, candidate_start_ - pad)});
      candidate_start_ = -1;
    }
    return;
  }
  if (p >= config_.onset_threshold) {
    silence_start_ = -1;
  } else if (p < config_.offset_threshold) {
    if (silence_start_ < 0) silence_start_ = start;
    if (end - silence_start_ >=
        std::max<std::int64_t>(window_, config_.ms_to_samples(config_.min_silence_ms))) {
      in_speech_ = false;
      last_end_event_ = std::min(end, silence_start_ + pad);
      events.push_back({VadEvent::Kind::kSpeechEnd, last_end_event_});
      silence_start_ = -1;
    }
  }
  // Between the thresholds: neither speech nor silence; an open quiet run continues.
}

std::int64_t SpeechProbabilitySegmenter::decided_until_sample() const {
  const std::int64_t scored = samples_scored();
  const std::int64_t pad = config_.ms_to_samples(config_.speech_pad_ms);
  // In speech, an end is dated speech_pad_ms after the first quiet window of the run that ends
  // it; out of speech, a start speech_pad_ms before the first window of its onset (never before
  // the last end).
  if (in_speech_) return silence_start_ >= 0 ? std::min(scored, silence_start_ + pad) : scored;
  const std::int64_t onset = candidate_start_ >= 0 ? candidate_start_ : scored;
  return std::min(scored, std::max(last_end_event_, onset - pad));
}

void SpeechProbabilitySegmenter::input_finished(std::int64_t total_samples,
                                                std::vector<VadEvent>& events) {
  if (!in_speech_) return;
  in_speech_ = false;
  std::int64_t end = total_samples;
  if (silence_start_ >= 0)
    end = std::min(end, silence_start_ + config_.ms_to_samples(config_.speech_pad_ms));
  last_end_event_ = end;
  events.push_back({VadEvent::Kind::kSpeechEnd, end});
}

std::vector<SpeechSegment> segments_from_probabilities(const SileroVadConfig& config,
                                                       std::span<const float> probabilities,
                                                       std::int64_t total_samples) {
  auto segmenter = SpeechProbabilitySegmenter::create(config);
  if (!segmenter) return {};
  std::vector<VadEvent> events;
  for (float p : probabilities) segmenter->accept(p, events);
  segmenter->input_finished(total_samples, events);
  return segments_from_events(events);
}

}  // namespace voxrt::audio
