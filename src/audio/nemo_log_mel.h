// NeMo's log-mel front end without normalisation (AudioToMelSpectrogramPreprocessor with
// normalize NA, as NeMo's cache-aware streaming models are trained), frame by frame: every frame
// depends only on the samples around it, so it streams (the per_feature and all_features
// normalisations need the whole utterance: nemo_features.h). NeMo's FilterbankFeatures in
// inference mode: pre-emphasis over the whole signal (y[t] = x[t] - 0.97 x[t-1], y[0] = x[0]),
// torch.stft(center=True, pad_mode="constant"): frame f centred on sample f * hop with zeros
// past both edges (nemo_frame_placement.h), a symmetric Hann window of window_size samples in
// n_fft, the power spectrum, librosa's Slaney mel filterbank (fmin 0, fmax sample_rate / 2) and
// log(x + 2^-24). A stream of S samples has 1 + S / hop frames, as NeMo's.
#pragma once

#include "audio/feature_config.h"

namespace voxrt::audio {

// NeMo's default log_zero_guard_value (log_zero_guard_type add).
inline constexpr double kNemoLogZeroGuard = 1.0 / 16777216.0;  // 2^-24

// FeatureType::kNemoLogMel with NeMo's Conformer / FastConformer defaults: 16 kHz, 25 ms frames
// every 10 ms, n_fft 512 (the frame length rounded up to a power of two), pre-emphasis 0.97,
// `mel_bins` bins. `preemphasis` is applied over the stream by the frame placement, not per
// frame as Kaldi's is.
FeatureConfig nemo_log_mel_feature_config(int mel_bins);

}  // namespace voxrt::audio
