#include "audio/torchaudio_log_mel.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace voxrt::audio {
namespace {

double hz_to_htk_mel(double hz) {
  return 2595.0 * std::log10(1.0 + hz / 700.0);
}

double htk_mel_to_hz(double mel) {
  return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0);
}

}  // namespace

FeatureConfig torchaudio_feature_config(int mel_bins, int sample_rate_hz, int n_fft, int hop) {
  FeatureConfig config;
  config.type = FeatureType::kTorchaudioLogMel;
  config.sample_rate_hz = sample_rate_hz;
  config.frame_length_ms = 1000.0 * n_fft / sample_rate_hz;  // win_length = n_fft
  config.frame_shift_ms = 1000.0 * hop / sample_rate_hz;
  config.num_bins = mel_bins;
  config.preemphasis = 0.0;
  config.remove_dc_offset = false;
  config.window = WindowType::kHann;
  config.periodic_window = true;  // torch.hann_window's default
  config.snip_edges = false;
  config.round_to_power_of_two = false;
  config.low_freq_hz = 0.0;
  config.high_freq_hz = 0.0;
  config.use_power = true;
  config.waveform_scale = kTorchaudioWaveformScale;
  return config;
}

std::vector<std::vector<double>> htk_mel_filterbank(int sample_rate_hz, int fft_size,
                                                    int mel_bins) {
  const int freqs = fft_size / 2 + 1;
  const double nyquist_hz = sample_rate_hz / 2;  // sample_rate // 2, as torchaudio
  const double mel_max = hz_to_htk_mel(nyquist_hz);
  // mel_bins + 2 points equally spaced in mel from 0, back in Hz: the triangles' corners.
  std::vector<double> corners_hz(static_cast<std::size_t>(mel_bins + 2));
  for (int i = 0; i < mel_bins + 2; ++i)
    corners_hz[i] = htk_mel_to_hz(mel_max * i / (mel_bins + 1));
  std::vector<std::vector<double>> weights(static_cast<std::size_t>(mel_bins),
                                           std::vector<double>(static_cast<std::size_t>(freqs)));
  for (int k = 0; k < freqs; ++k) {
    const double hz = nyquist_hz * k / (freqs - 1);  // linspace(0, sample_rate // 2, freqs)
    for (int m = 0; m < mel_bins; ++m) {
      const double rise = (hz - corners_hz[m]) / (corners_hz[m + 1] - corners_hz[m]);
      const double fall = (corners_hz[m + 2] - hz) / (corners_hz[m + 2] - corners_hz[m + 1]);
      weights[m][k] = std::max(0.0, std::min(rise, fall));
    }
  }
  return weights;
}

double piecewise_linear_log(double power) {
  return power > std::numbers::e ? std::log(power) : power / std::numbers::e;
}

}  // namespace voxrt::audio
