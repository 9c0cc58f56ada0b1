#include "audio/frame_placement.h"

#include "audio/centered_frame_placement.h"
#include "audio/kaldi_frame_placement.h"
#include "audio/nemo_frame_placement.h"
#include "audio/whisper_frame_placement.h"

namespace voxrt::audio {

std::unique_ptr<const FramePlacement> make_frame_placement(const FeatureConfig& config) {
  if (config.type == FeatureType::kWhisperLogMel)
    return std::make_unique<WhisperFramePlacement>(config);
  if (config.type == FeatureType::kTorchaudioLogMel)
    return std::make_unique<CenteredReflectFramePlacement>(config);
  if (config.type == FeatureType::kNemoLogMel) return std::make_unique<NemoFramePlacement>(config);
  return std::make_unique<KaldiFramePlacement>(config);
}

}  // namespace voxrt::audio
