#include "audio/centered_frame_placement.h"

namespace voxrt::audio {

CenteredReflectFramePlacement::CenteredReflectFramePlacement(const FeatureConfig& config)
    : frame_length_(config.frame_length_samples()), frame_shift_(config.frame_shift_samples()) {}

std::int64_t CenteredReflectFramePlacement::frame_start(std::int64_t frame) const {
  return frame * frame_shift_ - frame_length_ / 2;
}

void CenteredReflectFramePlacement::gather(std::int64_t frame, std::span<const float> buffer,
                                           std::int64_t buffer_start, std::int64_t total,
                                           double scale, std::span<double> out) const {
  const std::int64_t start = frame_start(frame);
  for (int j = 0; j < frame_length_; ++j) {
    std::int64_t index = start + j;
    // torch's "reflect": -1 -> 1 at the start, total -> total - 2 at the end. (A stream shorter
    // than half a frame would reflect more than once; torch refuses it, we clamp.)
    if (index < 0) index = -index;
    if (index >= total) index = 2 * (total - 1) - index;
    if (index < 0 || index >= total) {
      out[static_cast<std::size_t>(j)] = 0.0;
      continue;
    }
    out[static_cast<std::size_t>(j)] =
        static_cast<double>(buffer[static_cast<std::size_t>(index - buffer_start)]) * scale;
  }
}

std::int64_t CenteredReflectFramePlacement::frames_when_finished(std::int64_t total) const {
  return total == 0 ? 0 : 1 + total / frame_shift_;
}

}  // namespace voxrt::audio
