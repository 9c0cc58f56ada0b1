#include "audio/frame_features.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "audio/nemo_log_mel.h"
#include "audio/torchaudio_log_mel.h"
#include "audio/whisper_log_mel.h"

namespace voxrt::audio {
namespace {

// torchaudio.compliance.kaldi floors with torch.finfo(torch.float).eps; Kaldi with FLT_EPSILON.
constexpr double kLogFloor = std::numeric_limits<float>::epsilon();

double mel_scale(double hz) {
  return 1127.0 * std::log(1.0 + hz / 700.0);
}

}  // namespace

Expected<FrameFeatureComputer> FrameFeatureComputer::create(const FeatureConfig& config) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  VOXRT_ASSIGN_OR_RETURN(RealFft fft, RealFft::create(config.fft_size()));
  return FrameFeatureComputer(config, std::move(fft));
}

FrameFeatureComputer::FrameFeatureComputer(const FeatureConfig& config, RealFft fft)
    : config_(config), fft_(std::move(fft)) {
  build_window();
  if (config_.type == FeatureType::kFbank) build_mel_banks();
  if (config_.type == FeatureType::kWhisperLogMel || config_.type == FeatureType::kNemoLogMel) {
    store_dense_mel_banks(
        slaney_mel_filterbank(config_.sample_rate_hz, config_.fft_size(), config_.num_bins));
  }
  if (config_.type == FeatureType::kTorchaudioLogMel) {
    store_dense_mel_banks(
        htk_mel_filterbank(config_.sample_rate_hz, config_.fft_size(), config_.num_bins));
  }
}

void FrameFeatureComputer::build_window() {
  const int length = config_.frame_length_samples();
  const double denominator = config_.periodic_window ? length : length - 1;
  const double step = 2.0 * std::numbers::pi / denominator;
  window_.resize(static_cast<std::size_t>(length));
  for (int i = 0; i < length; ++i) {
    const double cosine = std::cos(step * i);
    switch (config_.window) {
      case WindowType::kPovey: window_[i] = std::pow(0.5 - 0.5 * cosine, 0.85); break;
      case WindowType::kHamming: window_[i] = 0.54 - 0.46 * cosine; break;
      case WindowType::kHann: window_[i] = 0.5 - 0.5 * cosine; break;
      case WindowType::kRectangular: window_[i] = 1.0; break;
    }
  }
}

// Kaldi's MelBanks (no VTLN): triangles equally spaced on the mel scale over FFT bins
// 0 .. fft_size/2 - 1 (the Nyquist bin gets no weight, as in Kaldi and torchaudio). The weights
// are computed in float, in torchaudio's order of operations, because Kaldi (BaseFloat) and
// torchaudio (float32 tensors) both do: near the edge of a triangle a weight is a small
// difference of mel values around 2000, and computing it in double instead moves log energies of
// nearly empty bins by up to ~5e-4.
void FrameFeatureComputer::build_mel_banks() {
  const int fft_bins = config_.fft_size() / 2;
  const double nyquist_hz = 0.5 * config_.sample_rate_hz;
  const double high_hz =
      config_.high_freq_hz > 0 ? config_.high_freq_hz : nyquist_hz + config_.high_freq_hz;
  // Scalars in double (Python floats in torchaudio), tensors in float.
  const double fft_bin_hz = static_cast<double>(config_.sample_rate_hz) / config_.fft_size();
  const double mel_low = mel_scale(config_.low_freq_hz);
  const double mel_step = (mel_scale(high_hz) - mel_low) / (config_.num_bins + 1);
  const float mel_low_f = static_cast<float>(mel_low);
  const float mel_step_f = static_cast<float>(mel_step);
  std::vector<float> fft_bin_mel(static_cast<std::size_t>(fft_bins));
  for (int k = 0; k < fft_bins; ++k) {
    const float hz = static_cast<float>(fft_bin_hz) * static_cast<float>(k);
    fft_bin_mel[k] = 1127.0f * std::log(1.0f + hz / 700.0f);
  }
  first_fft_bin_.assign(static_cast<std::size_t>(config_.num_bins), 0);
  mel_weights_.assign(static_cast<std::size_t>(config_.num_bins), {});
  for (int bin = 0; bin < config_.num_bins; ++bin) {
    const float left = mel_low_f + static_cast<float>(bin) * mel_step_f;
    const float center = mel_low_f + static_cast<float>(bin + 1) * mel_step_f;
    const float right = mel_low_f + static_cast<float>(bin + 2) * mel_step_f;
    int first = -1;
    std::vector<double>& weights = mel_weights_[bin];
    for (int k = 0; k < fft_bins; ++k) {
      const float mel = fft_bin_mel[k];
      const float up = (mel - left) / (center - left);
      const float down = (right - mel) / (right - center);
      const float weight = std::max(0.0f, std::min(up, down));
      if (weight <= 0.0f) continue;
      if (first < 0) first = k;
      weights.resize(static_cast<std::size_t>(k - first + 1), 0.0);
      weights[k - first] = weight;
    }
    first_fft_bin_[bin] = std::max(first, 0);
  }
}

// Whisper's and torchaudio's filterbanks over all n_fft / 2 + 1 bins (the Nyquist bin
// included), stored sparse.
void FrameFeatureComputer::store_dense_mel_banks(const std::vector<std::vector<double>>& dense) {
  first_fft_bin_.assign(dense.size(), 0);
  mel_weights_.assign(dense.size(), {});
  for (std::size_t bin = 0; bin < dense.size(); ++bin) {
    int first = -1;
    int last = -1;
    for (int k = 0; k < static_cast<int>(dense[bin].size()); ++k) {
      if (dense[bin][k] <= 0.0) continue;
      if (first < 0) first = k;
      last = k;
    }
    if (first < 0) continue;  // an empty triangle (many bins, small FFT): always the floor
    first_fft_bin_[bin] = first;
    mel_weights_[bin].assign(dense[bin].begin() + first, dense[bin].begin() + last + 1);
  }
}

FrameScratch FrameFeatureComputer::make_scratch() const {
  FrameScratch scratch;
  scratch.samples.assign(static_cast<std::size_t>(fft_.size()), 0.0);
  scratch.spectrum.resize(static_cast<std::size_t>(fft_.num_bins()));
  scratch.fft_work.resize(static_cast<std::size_t>(fft_.size() / 2));
  scratch.power.resize(static_cast<std::size_t>(fft_.num_bins()));
  return scratch;
}

void FrameFeatureComputer::compute(FrameScratch& scratch, float* features) const {
  const int length = config_.frame_length_samples();
  double* x = scratch.samples.data();
  if (config_.type == FeatureType::kWaveform) {
    for (int i = 0; i < length; ++i) features[i] = static_cast<float>(x[i]);
    return;
  }
  if (config_.remove_dc_offset) {
    double sum = 0.0;
    for (int i = 0; i < length; ++i) sum += x[i];
    const double mean = sum / length;
    for (int i = 0; i < length; ++i) x[i] -= mean;
  }
  auto log_energy = [&]() {
    double energy = 0.0;
    for (int i = 0; i < length; ++i) energy += x[i] * x[i];
    double value = std::log(std::max(energy, kLogFloor));
    if (config_.energy_floor > 0) value = std::max(value, std::log(config_.energy_floor));
    return value;
  };
  const bool wants_energy = config_.type == FeatureType::kFbank && config_.use_energy;
  double energy = 0.0;
  if (wants_energy && config_.raw_energy) energy = log_energy();
  // NeMo pre-emphasises the whole signal before framing: its frame placement already did.
  if (config_.preemphasis != 0.0 && config_.type != FeatureType::kNemoLogMel) {
    for (int i = length - 1; i > 0; --i) x[i] -= config_.preemphasis * x[i - 1];
    x[0] -= config_.preemphasis * x[0];
  }
  for (int i = 0; i < length; ++i) x[i] *= window_[i];
  if (wants_energy && !config_.raw_energy) energy = log_energy();
  std::fill(x + length, x + fft_.size(), 0.0);
  fft_.forward(scratch.samples, scratch.spectrum, scratch.fft_work);

  const int bins = fft_.num_bins();
  for (int k = 0; k < bins; ++k) {
    const double squared = std::norm(scratch.spectrum[k]);
    scratch.power[k] = config_.use_power ? squared : std::sqrt(squared);
  }
  if (config_.type == FeatureType::kLinearSpectrogram) {
    for (int k = 0; k < bins; ++k) features[k] = static_cast<float>(std::log1p(scratch.power[k]));
    return;
  }
  float* out = features;
  if (wants_energy) *out++ = static_cast<float>(energy);
  for (int bin = 0; bin < config_.num_bins; ++bin) {
    const std::vector<double>& weights = mel_weights_[bin];
    const double* power = scratch.power.data() + first_fft_bin_[bin];
    double sum = 0.0;
    for (std::size_t j = 0; j < weights.size(); ++j) sum += weights[j] * power[j];
    if (config_.type == FeatureType::kWhisperLogMel) {
      out[bin] = static_cast<float>(std::log10(std::max(sum, kWhisperLogFloor)));
    } else if (config_.type == FeatureType::kTorchaudioLogMel) {
      out[bin] = static_cast<float>(piecewise_linear_log(sum));
    } else if (config_.type == FeatureType::kNemoLogMel) {
      out[bin] = static_cast<float>(std::log(sum + kNemoLogZeroGuard));
    } else {
      out[bin] =
          static_cast<float>(config_.use_log_fbank ? std::log(std::max(sum, kLogFloor)) : sum);
    }
  }
}

}  // namespace voxrt::audio
