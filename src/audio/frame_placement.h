// Where a front end's frames sit on the samples and what a frame sees beyond the audio's edges:
// one kind per framing convention, so the streaming extractor (feature_extractor.h) holds no
// branch per front end.
//   - Kaldi (fbank, spectrogram, waveform): snip_edges true, frames inside the audio; false,
//     frames centred on frame * shift + shift / 2 and reflected at both edges (ExtractWindow).
//   - Whisper (torch.stft(center=True) over audio padded to its 30 s window): frames centred on
//     frame * shift, reflected at the start, zeros past the end.
//   - torchaudio's MelSpectrogram (torch.stft(center=True) over the stream): frames centred on
//     frame * shift, reflected at both edges.
//   - NeMo's log-mel (torch.stft(center=True, pad_mode="constant") over the pre-emphasised
//     stream): frames centred on frame * shift, zeros past both edges.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "audio/feature_config.h"

namespace voxrt::audio {

class FramePlacement {
 public:
  virtual ~FramePlacement() = default;
  // The first sample of `frame` (negative where the frame reaches before the audio).
  virtual std::int64_t frame_start(std::int64_t frame) const = 0;
  // Writes frame `frame`'s frame_length samples, times `scale`, into `out`. `buffer` holds the
  // samples from `buffer_start` on; `total` samples have been received. Samples the frame reads
  // beyond the edges come from the convention (reflection or zeros); the extractor keeps the
  // buffer long enough for them (one frame length before the next frame's start).
  virtual void gather(std::int64_t frame, std::span<const float> buffer, std::int64_t buffer_start,
                      std::int64_t total, double scale, std::span<double> out) const = 0;
  // How many frames a stream of `total` samples has once its input is finished (frames that
  // reach past the last sample included); 0 where no frame may reach past it (snip_edges).
  virtual std::int64_t frames_when_finished(std::int64_t total) const = 0;
};

std::unique_ptr<const FramePlacement> make_frame_placement(const FeatureConfig& config);

}  // namespace voxrt::audio
