#include "audio/whisper_log_mel.h"

#include <algorithm>
#include <cmath>

namespace voxrt::audio {
namespace {

// Slaney's mel scale (librosa htk=False): linear below 1 kHz, logarithmic above.
constexpr double kLinearHzPerMel = 200.0 / 3.0;
constexpr double kLogRegionStartHz = 1000.0;
constexpr double kLogRegionStartMel = kLogRegionStartHz / kLinearHzPerMel;  // 15

double log_step() {
  return std::log(6.4) / 27.0;
}

double hz_to_slaney_mel(double hz) {
  if (hz < kLogRegionStartHz) return hz / kLinearHzPerMel;
  return kLogRegionStartMel + std::log(hz / kLogRegionStartHz) / log_step();
}

double slaney_mel_to_hz(double mel) {
  if (mel < kLogRegionStartMel) return mel * kLinearHzPerMel;
  return kLogRegionStartHz * std::exp(log_step() * (mel - kLogRegionStartMel));
}

}  // namespace

FeatureConfig whisper_feature_config(int mel_bins) {
  FeatureConfig config;
  config.type = FeatureType::kWhisperLogMel;
  config.sample_rate_hz = 16000;
  config.frame_length_ms = 25.0;  // n_fft 400
  config.frame_shift_ms = 10.0;   // hop 160
  config.num_bins = mel_bins;
  config.preemphasis = 0.0;
  config.remove_dc_offset = false;
  config.window = WindowType::kHann;
  config.periodic_window = true;
  config.snip_edges = false;
  config.round_to_power_of_two = false;
  config.low_freq_hz = 0.0;
  config.high_freq_hz = 0.0;
  config.use_power = true;
  config.waveform_scale = 1.0;
  return config;
}

std::vector<std::vector<double>> slaney_mel_filterbank(int sample_rate_hz, int fft_size,
                                                       int mel_bins) {
  const int fft_bins = fft_size / 2 + 1;
  const double nyquist_hz = 0.5 * sample_rate_hz;
  const double mel_high = hz_to_slaney_mel(nyquist_hz);
  // mel_bins + 2 edges equally spaced in mel from 0 Hz to Nyquist, back in Hz.
  std::vector<double> edges_hz(static_cast<std::size_t>(mel_bins) + 2);
  for (int i = 0; i < mel_bins + 2; ++i) {
    edges_hz[i] = slaney_mel_to_hz(mel_high * i / (mel_bins + 1));
  }
  std::vector<std::vector<double>> weights(static_cast<std::size_t>(mel_bins),
                                           std::vector<double>(fft_bins, 0.0));
  for (int m = 0; m < mel_bins; ++m) {
    const double left = edges_hz[m];
    const double center = edges_hz[m + 1];
    const double right = edges_hz[m + 2];
    // Slaney's area normalisation: every triangle has the same area.
    const double area_norm = 2.0 / (right - left);
    for (int k = 0; k < fft_bins; ++k) {
      const double hz = nyquist_hz * k / (fft_bins - 1);
      const double rising = (hz - left) / (center - left);
      const double falling = (right - hz) / (right - center);
      weights[m][k] = std::max(0.0, std::min(rising, falling)) * area_norm;
    }
  }
  return weights;
}

void normalise_whisper_window(std::span<float> log_mel) {
  if (log_mel.empty()) return;
  const float floor = *std::max_element(log_mel.begin(), log_mel.end()) - 8.0f;
  for (float& x : log_mel) x = (std::max(x, floor) + 4.0f) / 4.0f;
}

}  // namespace voxrt::audio
