#include "audio/nemo_frame_placement.h"

namespace voxrt::audio {

NemoFramePlacement::NemoFramePlacement(const FeatureConfig& config)
    : frame_length_(config.frame_length_samples()),
      frame_shift_(config.frame_shift_samples()),
      preemphasis_(config.preemphasis) {}

std::int64_t NemoFramePlacement::frame_start(std::int64_t frame) const {
  return frame * frame_shift_ - frame_length_ / 2;
}

void NemoFramePlacement::gather(std::int64_t frame, std::span<const float> buffer,
                                std::int64_t buffer_start, std::int64_t total, double scale,
                                std::span<double> out) const {
  const std::int64_t start = frame_start(frame);
  // The extractor keeps a frame length before the next frame's start, so the sample before
  // this frame (pre-emphasis reaches back one) is still in the buffer.
  auto sample = [&](std::int64_t index) {
    return static_cast<double>(buffer[static_cast<std::size_t>(index - buffer_start)]);
  };
  for (int j = 0; j < frame_length_; ++j) {
    const std::int64_t index = start + j;
    double value = 0.0;
    if (index >= 0 && index < total) {
      value = sample(index);
      if (index > 0) value -= preemphasis_ * sample(index - 1);
    }
    out[static_cast<std::size_t>(j)] = value * scale;
  }
}

std::int64_t NemoFramePlacement::frames_when_finished(std::int64_t total) const {
  return total == 0 ? 0 : 1 + total / frame_shift_;
}

}  // namespace voxrt::audio
