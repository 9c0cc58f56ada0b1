// Per-frame feature computation shared by every stream: the window, the mel filterbank and the
// FFT plan are built once from a FeatureConfig and never change, so one FrameFeatureComputer
// serves many streams; each caller brings its own FrameScratch.
#pragma once

#include <complex>
#include <span>
#include <vector>

#include "audio/feature_config.h"
#include "audio/real_fft.h"

namespace voxrt::audio {

struct FrameScratch {
  std::vector<double> samples;  // fft_size: the frame, then zero padding
  std::vector<std::complex<double>> spectrum;
  std::vector<std::complex<double>> fft_work;
  std::vector<double> power;
};

class FrameFeatureComputer {
 public:
  static Expected<FrameFeatureComputer> create(const FeatureConfig& config);

  const FeatureConfig& config() const { return config_; }
  FrameScratch make_scratch() const;
  // `scratch.samples[0, frame_length)` holds one frame already scaled and dithered; writes
  // config().output_dim() values (before mean / inv_std normalisation) to `features`.
  void compute(FrameScratch& scratch, float* features) const;
  // The Kaldi mel filterbank: weights[bin] over FFT bins first_fft_bin[bin] onward.
  const std::vector<std::vector<double>>& mel_weights() const { return mel_weights_; }

 private:
  FrameFeatureComputer(const FeatureConfig& config, RealFft fft);
  void build_window();
  void build_mel_banks();
  void store_dense_mel_banks(const std::vector<std::vector<double>>& dense);

  FeatureConfig config_;
  RealFft fft_;
  std::vector<double> window_;
  std::vector<int> first_fft_bin_;
  std::vector<std::vector<double>> mel_weights_;
};

}  // namespace voxrt::audio
