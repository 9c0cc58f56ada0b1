#include "audio/feature_extractor.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace voxrt::audio {

Expected<StreamingFeatureExtractor> StreamingFeatureExtractor::create(const FeatureConfig& config) {
  VOXRT_ASSIGN_OR_RETURN(FrameFeatureComputer computer, FrameFeatureComputer::create(config));
  return StreamingFeatureExtractor(
      std::make_shared<const FrameFeatureComputer>(std::move(computer)));
}

StreamingFeatureExtractor StreamingFeatureExtractor::create(
    std::shared_ptr<const FrameFeatureComputer> computer) {
  return StreamingFeatureExtractor(std::move(computer));
}

StreamingFeatureExtractor::StreamingFeatureExtractor(
    std::shared_ptr<const FrameFeatureComputer> computer)
    : computer_(std::move(computer)),
      placement_(make_frame_placement(computer_->config())),
      scratch_(computer_->make_scratch()),
      frame_length_(computer_->config().frame_length_samples()) {
  reset();
}

void StreamingFeatureExtractor::reset() {
  buffer_.clear();
  buffer_start_ = 0;
  samples_received_ = 0;
  next_frame_ = 0;
  finished_ = false;
  ready_.clear();
  rng_state_ = config().dither_seed;
  has_spare_gaussian_ = false;
}

std::int64_t StreamingFeatureExtractor::frame_start(std::int64_t frame) const {
  return placement_->frame_start(frame);
}

// splitmix64 then Box-Muller: portable and reproducible across standard libraries.
double StreamingFeatureExtractor::next_gaussian() {
  if (has_spare_gaussian_) {
    has_spare_gaussian_ = false;
    return spare_gaussian_;
  }
  auto next_uniform = [this]() {
    rng_state_ += 0x9E3779B97F4A7C15ull;
    std::uint64_t z = rng_state_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
  };
  const double radius = std::sqrt(-2.0 * std::log(next_uniform()));
  const double angle = 2.0 * std::numbers::pi * next_uniform();
  spare_gaussian_ = radius * std::sin(angle);
  has_spare_gaussian_ = true;
  return radius * std::cos(angle);
}

void StreamingFeatureExtractor::compute_frame(std::int64_t frame) {
  std::span<double> x(scratch_.samples.data(), static_cast<std::size_t>(frame_length_));
  placement_->gather(frame, buffer_, buffer_start_, samples_received_, config().waveform_scale, x);
  if (config().dither > 0) {
    for (double& sample : x) sample += config().dither * next_gaussian();
  }
  const int dim = output_dim();
  const std::size_t offset = ready_.size();
  ready_.resize(offset + static_cast<std::size_t>(dim));
  float* features = ready_.data() + offset;
  computer_->compute(scratch_, features);
  const std::vector<float>& mean = config().mean;
  const std::vector<float>& inv_std = config().inv_std;
  if (!mean.empty()) {
    for (int d = 0; d < dim; ++d) features[d] -= mean[d];
  }
  if (!inv_std.empty()) {
    for (int d = 0; d < dim; ++d) features[d] *= inv_std[d];
  }
}

void StreamingFeatureExtractor::compute_available_frames() {
  while (frame_start(next_frame_) + frame_length_ <= samples_received_) {
    compute_frame(next_frame_);
    ++next_frame_;
  }
}

void StreamingFeatureExtractor::trim_buffer() {
  // Keep one frame length before the next frame's start: reflection at the end reaches back.
  const std::int64_t keep_from =
      std::max<std::int64_t>(0, frame_start(next_frame_) - frame_length_);
  if (keep_from <= buffer_start_) return;
  const std::int64_t drop =
      std::min<std::int64_t>(keep_from - buffer_start_, static_cast<std::int64_t>(buffer_.size()));
  buffer_.erase(buffer_.begin(), buffer_.begin() + drop);
  buffer_start_ += drop;
}

void StreamingFeatureExtractor::accept_waveform(std::span<const float> samples) {
  if (finished_ || samples.empty()) return;
  buffer_.insert(buffer_.end(), samples.begin(), samples.end());
  samples_received_ += static_cast<std::int64_t>(samples.size());
  compute_available_frames();
  trim_buffer();
}

void StreamingFeatureExtractor::input_finished() {
  if (finished_) return;
  finished_ = true;
  if (samples_received_ == 0) return;
  const std::int64_t total_frames = placement_->frames_when_finished(samples_received_);
  while (next_frame_ < total_frames) {
    compute_frame(next_frame_);
    ++next_frame_;
  }
}

int StreamingFeatureExtractor::pop_frames(std::vector<float>& features, int max_frames) {
  const int count = std::min(std::max(max_frames, 0), frames_ready());
  const std::size_t values =
      static_cast<std::size_t>(count) * static_cast<std::size_t>(output_dim());
  features.insert(features.end(), ready_.begin(),
                  ready_.begin() + static_cast<std::ptrdiff_t>(values));
  ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(values));
  return count;
}

Expected<std::vector<float>> compute_features(const FeatureConfig& config,
                                              std::span<const float> samples) {
  VOXRT_ASSIGN_OR_RETURN(auto extractor, StreamingFeatureExtractor::create(config));
  extractor.accept_waveform(samples);
  extractor.input_finished();
  std::vector<float> features;
  extractor.pop_frames(features, extractor.frames_ready());
  return features;
}

}  // namespace voxrt::audio
