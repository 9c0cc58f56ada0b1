// Whisper's framing (FramePlacement, frame_placement.h): torch.stft(center=True) over the audio
// padded with zeros to its 30 s window.
#include "audio/whisper_frame_placement.h"

namespace voxrt::audio {

WhisperFramePlacement::WhisperFramePlacement(const FeatureConfig& config)
    : frame_length_(config.frame_length_samples()), frame_shift_(config.frame_shift_samples()) {}

std::int64_t WhisperFramePlacement::frame_start(std::int64_t frame) const {
  return frame * frame_shift_ - frame_length_ / 2;
}

void WhisperFramePlacement::gather(std::int64_t frame, std::span<const float> buffer,
                                   std::int64_t buffer_start, std::int64_t total, double scale,
                                   std::span<double> out) const {
  const std::int64_t start = frame_start(frame);
  for (int j = 0; j < frame_length_; ++j) {
    std::int64_t index = start + j;
    // The start reflects without repeating the edge sample (torch's "reflect"); past the end the
    // audio is zeros, as Whisper pads it to its 30 s window.
    if (index < 0) index = -index;
    out[static_cast<std::size_t>(j)] =
        index < total
            ? static_cast<double>(buffer[static_cast<std::size_t>(index - buffer_start)]) * scale
            : 0.0;
  }
}

std::int64_t WhisperFramePlacement::frames_when_finished(std::int64_t total) const {
  // Every frame that holds a sample of the audio (the rest of its window is silence).
  return (total + frame_length_ / 2 - 1) / frame_shift_ + 1;
}

}  // namespace voxrt::audio
