#include "audio/nemo_log_mel.h"

namespace voxrt::audio {

FeatureConfig nemo_log_mel_feature_config(int mel_bins) {
  FeatureConfig config;
  config.type = FeatureType::kNemoLogMel;
  config.sample_rate_hz = 16000;
  config.frame_length_ms = 25.0;
  config.frame_shift_ms = 10.0;
  config.num_bins = mel_bins;
  config.preemphasis = 0.97;
  config.remove_dc_offset = false;
  config.window = WindowType::kHann;
  config.periodic_window = false;  // torch.hann_window(periodic=False), as NeMo builds it
  config.snip_edges = false;
  config.round_to_power_of_two = true;
  config.use_power = true;
  config.waveform_scale = 1.0;  // NeMo takes samples in [-1, 1]
  return config;
}

}  // namespace voxrt::audio
