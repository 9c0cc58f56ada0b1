// NeMo's framing (its log-mel front end without normalisation, nemo_log_mel.h): frames centred
// on frame * shift with zeros past both edges (torch.stft(center=True, pad_mode="constant")), of
// the pre-emphasised signal: NeMo applies pre-emphasis over the whole signal before framing, so
// a frame's first sample subtracts the sample before the frame, and a sample past the end is a
// zero of the padding, not a pre-emphasised one.
#pragma once

#include "audio/frame_placement.h"

namespace voxrt::audio {

class NemoFramePlacement final : public FramePlacement {
 public:
  explicit NemoFramePlacement(const FeatureConfig& config);
  std::int64_t frame_start(std::int64_t frame) const override;
  void gather(std::int64_t frame, std::span<const float> buffer, std::int64_t buffer_start,
              std::int64_t total, double scale, std::span<double> out) const override;
  std::int64_t frames_when_finished(std::int64_t total) const override;

 private:
  int frame_length_;
  int frame_shift_;
  double preemphasis_;
};

}  // namespace voxrt::audio
