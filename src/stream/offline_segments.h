// What the offline families (ctc_offline, transducer_offline) share: NeMo's front end over whole
// segments. The driver hands such a family raw samples (FeatureType::kWaveform, one hop per
// frame) in segments of up to voxrt.offline.max_frames hops; each segment is one utterance for
// NeMo's features (normalised over that segment only), and the segments of a batch go into one
// encoder call, zero-padded (NeMo's pad_value) to the longest, each with its own length.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "audio/feature_config.h"
#include "audio/nemo_features.h"
#include "stream/model_family.h"
#include "voxrt/tensor.h"

namespace voxrt::stream {

// One batch of segments as the encoder takes them.
struct OfflineSegmentBatch {
  Tensor signal;                      // [rows, n_mels, longest] f32
  std::vector<std::int64_t> lengths;  // each row's feature frames (0: the row had no audio)
};

class OfflineSegmentFrontEnd {
 public:
  // From the voxrt.nemo.* keys, voxrt.subsampling (a power of two) and voxrt.offline.max_frames.
  static Expected<OfflineSegmentFrontEnd> create(const std::map<std::string, std::string>& metadata,
                                                 const std::string& where);

  const audio::FeatureConfig& feature_config() const { return feature_config_; }
  const ChunkLayout& layout() const { return layout_; }
  const audio::NemoFeatureConfig& nemo() const { return front_end_->config(); }

  // NeMo's features of each chunk's valid samples (`frames` hops were handed per chunk).
  Expected<OfflineSegmentBatch> features(std::span<const ChunkInput> batch, int frames) const;

  // Output frames of a segment of `feature_frames` frames: NeMo's striding subsampling halves
  // the length log2(subsampling) times, each time rounding up (ConvSubsampling.calc_length with
  // kernel 3, stride 2, padding 1).
  int output_frames(int feature_frames) const {
    return output_frames_for(feature_frames, layout_.subsampling);
  }
  static int output_frames_for(int feature_frames, int subsampling);

 private:
  OfflineSegmentFrontEnd() = default;

  std::optional<audio::NemoFeatureComputer> front_end_;
  audio::FeatureConfig feature_config_;
  ChunkLayout layout_;
};

}  // namespace voxrt::stream
