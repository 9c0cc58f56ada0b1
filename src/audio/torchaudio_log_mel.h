// The front end of torchaudio's RNN-T pipelines (torchaudio.pipelines.RNNTBundle's feature
// extractor, e.g. EMFORMER_RNNT_BASE_LIBRISPEECH): MelSpectrogram(16 kHz, n_fft 400, hop 160) -
// a 400-sample periodic Hann window every 160 samples centred on multiples of the hop (both
// edges reflect, as torch.stft(center=True, pad_mode="reflect")), the power spectrum over the
// 201 bins, an HTK mel filterbank of triangles in Hz with no area normalisation
// (torchaudio.functional.melscale_fbanks' defaults) - then the pipeline's gain of 32767^2 (samples
// at int16 scale, 32767) and its piecewise-linear log: log(x) above e, x / e at or below it. The
// global stats normalisation, (x - mean) * invstddev, is the shared front end's mean / inv_std.
#pragma once

#include <vector>

#include "audio/feature_config.h"

namespace voxrt::audio {

// torchaudio's int16 full scale: the pipeline's gain is 10^(0.05 * 2 * 20 * log10(32767)).
inline constexpr double kTorchaudioWaveformScale = 32767.0;

// The front end's settings for `mel_bins` at `sample_rate_hz`, with `n_fft` and `hop` samples.
FeatureConfig torchaudio_feature_config(int mel_bins, int sample_rate_hz = 16000, int n_fft = 400,
                                        int hop = 160);

// torchaudio.functional.melscale_fbanks(n_fft / 2 + 1, 0, sample_rate / 2, mel_bins,
// sample_rate, norm=None, mel_scale="htk"): weights[mel][fft_bin].
std::vector<std::vector<double>> htk_mel_filterbank(int sample_rate_hz, int fft_size, int mel_bins);

// _piecewise_linear_log of torchaudio's rnnt_pipeline: log above e, linear (x / e) below.
double piecewise_linear_log(double power);

}  // namespace voxrt::audio
