// Kaldi's framing (fbank, spectrogram, waveform front ends): see frame_placement.h.
#pragma once

#include "audio/frame_placement.h"

namespace voxrt::audio {

class KaldiFramePlacement final : public FramePlacement {
 public:
  explicit KaldiFramePlacement(const FeatureConfig& config);
  std::int64_t frame_start(std::int64_t frame) const override;
  void gather(std::int64_t frame, std::span<const float> buffer, std::int64_t buffer_start,
              std::int64_t total, double scale, std::span<double> out) const override;
  std::int64_t frames_when_finished(std::int64_t total) const override;

 private:
  int frame_length_;
  int frame_shift_;
  bool snip_edges_;
};

}  // namespace voxrt::audio
