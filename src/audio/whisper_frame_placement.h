// Whisper's framing (its log-mel front end, whisper_log_mel.h): see frame_placement.h.
#pragma once

#include "audio/frame_placement.h"

namespace voxrt::audio {

class WhisperFramePlacement final : public FramePlacement {
 public:
  explicit WhisperFramePlacement(const FeatureConfig& config);
  std::int64_t frame_start(std::int64_t frame) const override;
  void gather(std::int64_t frame, std::span<const float> buffer, std::int64_t buffer_start,
              std::int64_t total, double scale, std::span<double> out) const override;
  std::int64_t frames_when_finished(std::int64_t total) const override;

 private:
  int frame_length_;
  int frame_shift_;
};

}  // namespace voxrt::audio
