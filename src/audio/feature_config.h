// Settings of the acoustic front end. The defaults are Kaldi's (and torchaudio.compliance.kaldi's)
// fbank defaults; from_metadata() reads the keys of docs/model_contract.md, so the model decides
// its own features (STYLE.md 12).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "voxrt/status.h"

namespace voxrt::audio {

// kWaveform: each frame is one hop of samples passed through untouched, for families that
// compute their own features over a whole utterance (NeMo's per-utterance normalised log-mel:
// stream/ctc/offline_ctc_model.h). kWhisperLogMel: Whisper's per-frame log10 Slaney mel
// (whisper_log_mel.h); its framing is torch.stft(center=True)'s, not Kaldi's, whatever
// snip_edges says. kTorchaudioLogMel: torchaudio's RNN-T pipelines' HTK mel with their
// piecewise-linear log (torchaudio_log_mel.h), framed as torch.stft(center=True).
// kNemoLogMel: NeMo's log-mel without normalisation (nemo_log_mel.h), its pre-emphasis over the
// stream and torch.stft(center=True)'s zero padding (nemo_frame_placement.h).
enum class FeatureType : std::uint8_t {
  kFbank,
  kLinearSpectrogram,
  kWaveform,
  kWhisperLogMel,
  kTorchaudioLogMel,
  kNemoLogMel
};
enum class WindowType : std::uint8_t { kPovey, kHamming, kHann, kRectangular };

struct FeatureConfig {
  FeatureType type = FeatureType::kFbank;
  int sample_rate_hz = 16000;
  double frame_length_ms = 25.0;
  double frame_shift_ms = 10.0;
  // Mel bins (fbank) or frequency bins (spectrogram: must be fft_size / 2 + 1).
  int num_bins = 80;
  // Gaussian noise of this standard deviation (in waveform_scale units) added to each sample.
  double dither = 0.0;
  std::uint64_t dither_seed = 0;
  double preemphasis = 0.97;
  bool remove_dc_offset = true;
  WindowType window = WindowType::kPovey;
  // Periodic (N denominators) instead of Kaldi's symmetric (N - 1) windows; DS2 uses periodic.
  bool periodic_window = false;
  // Kaldi snip_edges: frames lie entirely inside the audio. false: frames are centred on
  // multiples of the shift and the edges reflect, which needs input_finished() for the tail.
  bool snip_edges = true;
  // Zero-pad each frame to a power of two before the FFT (Kaldi's round_to_power_of_two).
  bool round_to_power_of_two = true;
  double low_freq_hz = 20.0;
  // 0 or negative: offset from the Nyquist frequency.
  double high_freq_hz = 0.0;
  // Floor for the log energy column (0: none), as Kaldi's energy_floor.
  double energy_floor = 0.0;
  // Prepend a log-energy column (Kaldi use_energy).
  bool use_energy = false;
  // Energy measured before pre-emphasis and windowing (Kaldi raw_energy).
  bool raw_energy = true;
  bool use_log_fbank = true;
  // Power (|X|^2) rather than magnitude spectrum for the mel bins.
  bool use_power = true;
  // Samples arrive in [-1, 1]; Kaldi-trained models expect 16-bit integer scale (32768).
  double waveform_scale = 32768.0;
  // Optional per-dimension normalisation after the log: (x - mean) * inv_std.
  std::vector<float> mean;
  std::vector<float> inv_std;

  // DS2 style: 20 ms hamming (periodic) frames, 10 ms hop, log(1 + |STFT|), 161 bins, [-1, 1].
  static FeatureConfig linear_spectrogram();
  // Frames of `hop_ms` samples passed through (num_bins = samples per hop), scale 1.
  static FeatureConfig waveform(int sample_rate_hz, double hop_ms);
  // Defaults for `type`, then every voxrt.feature.* key present overrides them.
  static Expected<FeatureConfig> from_metadata(const std::map<std::string, std::string>& metadata);

  Status validate() const;
  std::string to_string() const;

  int frame_length_samples() const;
  int frame_shift_samples() const;
  int fft_size() const;
  // Values per output frame: num_bins, plus one with use_energy (fbank).
  int output_dim() const;
};

const char* feature_type_name(FeatureType type);
const char* window_type_name(WindowType type);

}  // namespace voxrt::audio
