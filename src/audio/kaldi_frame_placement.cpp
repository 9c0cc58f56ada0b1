// Kaldi's framing (FramePlacement, frame_placement.h): ExtractWindow's frame positions and its
// reflection at both edges for snip_edges=false.
#include "audio/kaldi_frame_placement.h"

namespace voxrt::audio {

KaldiFramePlacement::KaldiFramePlacement(const FeatureConfig& config)
    : frame_length_(config.frame_length_samples()),
      frame_shift_(config.frame_shift_samples()),
      snip_edges_(config.snip_edges) {}

std::int64_t KaldiFramePlacement::frame_start(std::int64_t frame) const {
  if (snip_edges_) return frame * frame_shift_;
  // snip_edges=false: frame centred on frame * shift + shift / 2.
  return frame * frame_shift_ + frame_shift_ / 2 - frame_length_ / 2;
}

void KaldiFramePlacement::gather(std::int64_t frame, std::span<const float> buffer,
                                 std::int64_t buffer_start, std::int64_t total, double scale,
                                 std::span<double> out) const {
  const std::int64_t start = frame_start(frame);
  for (int j = 0; j < frame_length_; ++j) {
    std::int64_t index = start + j;
    // Reflect at both edges, the edge sample repeated (only snip_edges=false reaches them).
    while (index < 0 || index >= total) index = index < 0 ? -index - 1 : 2 * total - 1 - index;
    out[static_cast<std::size_t>(j)] =
        static_cast<double>(buffer[static_cast<std::size_t>(index - buffer_start)]) * scale;
  }
}

std::int64_t KaldiFramePlacement::frames_when_finished(std::int64_t total) const {
  if (snip_edges_) return 0;
  return (total + frame_shift_ / 2) / frame_shift_;
}

}  // namespace voxrt::audio
