// Whisper's front end (OpenAI's whisper.audio and Hugging Face's WhisperFeatureExtractor): 16 kHz,
// 400-sample periodic Hann frames every 160 samples centred on multiples of the hop (the start
// of the stream reflects, as torch.stft(center=True)), the power spectrum, a Slaney mel
// filterbank (librosa's default: Slaney's mel scale and area normalisation), log10 with a floor
// of 1e-10; then, per 30 s window of 3000 frames, the window's values are clamped to at least its
// maximum - 8 and mapped by (x + 4) / 4. The per-frame part is FeatureType::kWhisperLogMel of
// the shared front end (frame_features.h); the per-window part needs the whole window, so the
// encoder_decoder family applies it (normalise_whisper_window).
#pragma once

#include <span>
#include <vector>

#include "audio/feature_config.h"

namespace voxrt::audio {

// Frames per encoder window (30 s at a 10 ms hop) and the log10 floor.
inline constexpr int kWhisperWindowFrames = 3000;
inline constexpr double kWhisperLogFloor = 1e-10;
// The per-frame value of silence (zero power): log10(1e-10). A window's padding frames hold it,
// as the zero samples Whisper pads its audio with give it.
inline constexpr float kWhisperSilenceLogMel = -10.0f;

// The front end's settings for `mel_bins` (80 for Whisper v1-v2, 128 for v3).
FeatureConfig whisper_feature_config(int mel_bins);

// librosa.filters.mel(sr, n_fft, n_mels) with its defaults (fmin 0, fmax sr / 2, htk False,
// norm "slaney"): weights[mel][fft_bin] over the n_fft / 2 + 1 FFT bins.
std::vector<std::vector<double>> slaney_mel_filterbank(int sample_rate_hz, int fft_size,
                                                       int mel_bins);

// Whisper's normalisation of one window of log10 mel frames (frames x mel_bins values, padding
// included), in place: x = max(x, max(window) - 8); x = (x + 4) / 4.
void normalise_whisper_window(std::span<float> log_mel);

}  // namespace voxrt::audio
