// Streaming front end: samples of any chunk size in, feature frames out (where frames sit and
// what they see past the edges: frame_placement.h). Frames are computed as
// soon as their last sample has arrived, each from exactly the same samples whatever the chunking,
// so chunked and whole input give bit-identical features (dither included: the noise is drawn
// per frame in frame order from a seeded generator).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "audio/frame_features.h"
#include "audio/frame_placement.h"

namespace voxrt::audio {

class StreamingFeatureExtractor {
 public:
  static Expected<StreamingFeatureExtractor> create(const FeatureConfig& config);
  // Many streams can share one computer (it is immutable).
  static StreamingFeatureExtractor create(std::shared_ptr<const FrameFeatureComputer> computer);

  const FeatureConfig& config() const { return computer_->config(); }
  int output_dim() const { return config().output_dim(); }

  // Samples in [-1, 1] at config().sample_rate_hz (resample first); any count, including zero.
  void accept_waveform(std::span<const float> samples);
  // End of the stream: with snip_edges false, emits the frames that reach past the last sample.
  void input_finished();
  bool is_finished() const { return finished_; }

  int frames_ready() const { return static_cast<int>(ready_.size()) / output_dim(); }
  // Moves up to `max_frames` ready frames (row-major, output_dim() values each, normalised) to
  // the end of `features`; returns how many.
  int pop_frames(std::vector<float>& features, int max_frames);
  // Frames produced so far (popped or not) and samples received so far.
  std::int64_t frames_computed() const { return next_frame_; }
  std::int64_t samples_received() const { return samples_received_; }

  // Starts a new stream with the same settings (the dither generator restarts from its seed).
  void reset();

 private:
  explicit StreamingFeatureExtractor(std::shared_ptr<const FrameFeatureComputer> computer);
  std::int64_t frame_start(std::int64_t frame) const;
  void compute_frame(std::int64_t frame);
  void compute_available_frames();
  void trim_buffer();
  double next_gaussian();

  std::shared_ptr<const FrameFeatureComputer> computer_;
  // Shared by copies of the extractor (immutable), like the computer.
  std::shared_ptr<const FramePlacement> placement_;
  FrameScratch scratch_;
  int frame_length_;
  std::vector<float> buffer_;  // samples from buffer_start_ on
  std::int64_t buffer_start_ = 0;
  std::int64_t samples_received_ = 0;
  std::int64_t next_frame_ = 0;
  bool finished_ = false;
  std::vector<float> ready_;
  std::uint64_t rng_state_ = 0;
  double spare_gaussian_ = 0.0;
  bool has_spare_gaussian_ = false;
};

// Whole-clip convenience: features of `samples` as frames x output_dim, row-major.
Expected<std::vector<float>> compute_features(const FeatureConfig& config,
                                              std::span<const float> samples);

}  // namespace voxrt::audio
