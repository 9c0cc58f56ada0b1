// NeMo's log-mel front end (AudioToMelSpectrogramPreprocessor's FilterbankFeatures, inference
// mode: no dither) over one whole utterance, because its per_feature and all_features
// normalisations take the mean and standard deviation over the utterance: the features of a
// frame depend on audio that comes after it, so this front end cannot stream frame by frame.
// Settings come from the model's contract keys (voxrt.nemo.*, docs/model_contract.md), which the
// NeMo importer writes from model_config.yaml's preprocessor section.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "audio/real_fft.h"
#include "voxrt/status.h"

namespace voxrt::audio {

enum class NemoNormalize : std::uint8_t { kPerFeature, kAllFeatures, kNone };
enum class NemoLogGuard : std::uint8_t { kAdd, kClamp };

struct NemoFeatureConfig {
  int sample_rate_hz = 16000;
  double window_size_s = 0.02;
  double window_stride_s = 0.01;
  // 0: the window length rounded up to a power of two (NeMo's default).
  int n_fft = 0;
  int n_mels = 64;
  // 0: none. Applied over the whole signal before framing (not per frame as Kaldi does).
  double preemphasis = 0.97;
  bool log = true;
  NemoLogGuard log_guard = NemoLogGuard::kAdd;
  double log_zero_guard_value = 1.0 / 16777216.0;  // 2^-24
  double low_freq_hz = 0.0;
  double high_freq_hz = 0.0;  // 0: Nyquist
  // Power of the magnitude spectrum the mel bins sum (2: power spectrum).
  double mag_power = 2.0;
  // librosa's Slaney area normalisation of each mel triangle (mel_norm: slaney); false: none.
  bool mel_norm_slaney = true;
  NemoNormalize normalize = NemoNormalize::kPerFeature;
  // Frames padded (with pad_value) up to a multiple of this; 0: none.
  int pad_to = 0;
  double pad_value = 0.0;
  // torch.stft's centring pad: zeros (current NeMo passes pad_mode "constant") or reflection
  // (NeMo releases before that used torch's default).
  bool reflect_pad = false;

  int window_samples() const;
  int hop_samples() const;
  int fft_size() const;
  // Frames NeMo makes of `samples` samples (torch.stft centred: 1 + samples / hop).
  std::int64_t frames_for(std::int64_t samples) const;

  Status validate() const;
  // voxrt.nemo.* keys; absent keys keep the defaults above.
  static Expected<NemoFeatureConfig> from_metadata(
      const std::map<std::string, std::string>& metadata);
  std::map<std::string, std::string> to_metadata() const;
};

const char* nemo_normalize_name(NemoNormalize normalize);
// "per_feature", "all_features", or "NA" / "" / "none" for none (NeMo's and sherpa-onnx's names).
Expected<NemoNormalize> nemo_normalize_from_name(const std::string& name);

// Features in NeMo's layout: n_mels rows of `padded_frames` values (row-major, mel bin major, as
// audio_signal [B, n_mels, T] takes them); the first `frames` columns come from the audio.
struct NemoFeatures {
  int n_mels = 0;
  int frames = 0;
  int padded_frames = 0;
  std::vector<float> values;
};

class NemoFeatureComputer {
 public:
  static Expected<NemoFeatureComputer> create(const NemoFeatureConfig& config);
  const NemoFeatureConfig& config() const { return config_; }
  // `samples` in [-1, 1] at config().sample_rate_hz; an empty utterance is an error.
  Expected<NemoFeatures> compute(std::span<const float> samples) const;
  // The mel filterbank: n_mels rows of fft_size / 2 + 1 weights.
  const std::vector<std::vector<float>>& mel_weights() const { return mel_weights_; }

 private:
  NemoFeatureComputer(const NemoFeatureConfig& config, RealFft fft);
  void build_mel_weights();

  NemoFeatureConfig config_;
  RealFft fft_;
  std::vector<double> window_;  // window_samples() values
  std::vector<std::vector<float>> mel_weights_;
  // Each mel row's non-zero FFT bins [first, end): the product skips the zeros (most of a row).
  std::vector<std::pair<int, int>> mel_ranges_;
};

}  // namespace voxrt::audio
