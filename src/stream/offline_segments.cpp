#include "stream/offline_segments.h"

#include <algorithm>

#include "stream/model_metadata.h"

namespace voxrt::stream {
namespace {

// Hops per segment when the model does not say: 30 s of 10 ms hops.
constexpr int kDefaultMaxFrames = 3000;

}  // namespace

int OfflineSegmentFrontEnd::output_frames_for(int feature_frames, int subsampling) {
  int frames = feature_frames;
  for (int factor = subsampling; factor > 1; factor /= 2) frames = (frames + 1) / 2;
  return frames;
}

Expected<OfflineSegmentFrontEnd> OfflineSegmentFrontEnd::create(
    const std::map<std::string, std::string>& metadata, const std::string& where) {
  OfflineSegmentFrontEnd f;
  VOXRT_ASSIGN_OR_RETURN(auto nemo, audio::NemoFeatureConfig::from_metadata(metadata));
  VOXRT_ASSIGN_OR_RETURN(auto front_end, audio::NemoFeatureComputer::create(nemo));
  f.front_end_.emplace(std::move(front_end));
  f.feature_config_ = audio::FeatureConfig::waveform(
      nemo.sample_rate_hz, 1000.0 * nemo.hop_samples() / nemo.sample_rate_hz);
  VOXRT_RETURN_IF_ERROR(f.feature_config_.validate().with_context(where));
  VOXRT_ASSIGN_OR_RETURN(f.layout_.subsampling,
                         metadata_int(metadata, "voxrt.subsampling", 1, true, where));
  const int s = f.layout_.subsampling;
  if ((s & (s - 1)) != 0) {
    return unsupported(where, ": voxrt.subsampling ", s,
                       " is not a power of two (NeMo's striding subsampling halves the length)");
  }
  VOXRT_ASSIGN_OR_RETURN(f.layout_.chunk_frames, metadata_int(metadata, "voxrt.offline.max_frames",
                                                              kDefaultMaxFrames, false, where));
  f.layout_.shift_frames = f.layout_.chunk_frames;
  f.layout_.min_chunk_frames = 1;
  f.layout_.pad_frame.assign(static_cast<std::size_t>(f.feature_config_.output_dim()), 0.0f);
  return f;
}

Expected<OfflineSegmentBatch> OfflineSegmentFrontEnd::features(std::span<const ChunkInput> batch,
                                                               int frames) const {
  const int hop = feature_config_.output_dim();
  const int mels = front_end_->config().n_mels;
  // Each stream's segment is its own utterance: features (normalised over its own audio only),
  // then all of them padded to the longest, with each one's length, in one engine call.
  std::vector<audio::NemoFeatures> features;
  features.reserve(batch.size());
  int longest = 1;
  for (const ChunkInput& input : batch) {
    const int valid = std::clamp(input.valid_frames, 0, frames);
    if (valid == 0) {
      features.emplace_back();
      continue;
    }
    VOXRT_ASSIGN_OR_RETURN(auto f, front_end_->compute(std::span<const float>(
                                       input.features, static_cast<std::size_t>(valid) *
                                                           static_cast<std::size_t>(hop))));
    longest = std::max(longest, f.padded_frames);
    features.push_back(std::move(f));
  }
  const auto rows = static_cast<std::int64_t>(batch.size());
  OfflineSegmentBatch out;
  out.signal = Tensor::zeros(DType::kF32, {rows, mels, longest});
  out.lengths.assign(batch.size(), 0);
  const float pad_value = static_cast<float>(front_end_->config().pad_value);
  for (std::size_t b = 0; b < batch.size(); ++b) {
    float* row = out.signal.data<float>() + b * static_cast<std::size_t>(mels) * longest;
    std::fill(row, row + static_cast<std::size_t>(mels) * longest, pad_value);
    const audio::NemoFeatures& f = features[b];
    for (int m = 0; m < f.n_mels; ++m)
      std::copy_n(f.values.data() + static_cast<std::size_t>(m) * f.padded_frames, f.padded_frames,
                  row + static_cast<std::size_t>(m) * longest);
    out.lengths[b] = f.frames;
  }
  return out;
}

}  // namespace voxrt::stream
