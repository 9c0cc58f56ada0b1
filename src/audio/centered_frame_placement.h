// torch.stft(center=True, pad_mode="reflect")'s framing, as torchaudio's MelSpectrogram uses it
// over a whole stream (torchaudio_log_mel.h): frame f is centred on sample f * shift, and both
// edges reflect without repeating the edge sample; a stream of S samples has 1 + S / shift frames.
#pragma once

#include "audio/frame_placement.h"

namespace voxrt::audio {

class CenteredReflectFramePlacement final : public FramePlacement {
 public:
  explicit CenteredReflectFramePlacement(const FeatureConfig& config);
  std::int64_t frame_start(std::int64_t frame) const override;
  void gather(std::int64_t frame, std::span<const float> buffer, std::int64_t buffer_start,
              std::int64_t total, double scale, std::span<double> out) const override;
  std::int64_t frames_when_finished(std::int64_t total) const override;

 private:
  int frame_length_;
  int frame_shift_;
};

}  // namespace voxrt::audio
