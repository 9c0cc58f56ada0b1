"""Reference for unit_audio's Whisper front end, written from the definition (OpenAI's
whisper.audio.log_mel_spectrogram / Hugging Face's WhisperFeatureExtractor): the audio is padded
with zeros to whole 30 s windows, torch.stft(n_fft=400, hop=160, periodic Hann, center=True,
reflect), the power spectrum without its last frame, librosa's Slaney mel filterbank (written out
below in numpy, float64), log10(max(x, 1e-10)), then per window of 3000 frames
max(x, max - 8) and (x + 4) / 4. Usage: whisper_mel_reference.py IN.f32 OUT.f32 MEL_BINS.
The number of windows: enough for every frame that holds a sample (frame f covers samples
160 f - 200 .. 160 f + 199). Exit status 3 when torch is missing."""
import math
import sys

try:
    import numpy as np
    import torch
except ImportError as error:  # pragma: no cover
    print(f"torch unavailable: {error}", file=sys.stderr)
    sys.exit(3)

SAMPLE_RATE = 16000
N_FFT = 400
HOP = 160
WINDOW_FRAMES = 3000


def hz_to_mel(hz):
    hz = np.asarray(hz, dtype=np.float64)
    f_sp = 200.0 / 3
    mels = hz / f_sp
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(hz >= min_log_hz, min_log_mel + np.log(np.maximum(hz, 1e-30) / min_log_hz) / logstep, mels)


def mel_to_hz(mels):
    mels = np.asarray(mels, dtype=np.float64)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return np.where(mels >= min_log_mel, min_log_hz * np.exp(logstep * (mels - min_log_mel)), f_sp * mels)


def slaney_mel(n_mels):
    fftfreqs = np.linspace(0, SAMPLE_RATE / 2, 1 + N_FFT // 2)
    mel_f = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(SAMPLE_RATE / 2.0), n_mels + 2))
    fdiff = np.diff(mel_f)
    ramps = mel_f[:, None] - fftfreqs[None, :]
    weights = np.zeros((n_mels, len(fftfreqs)))
    for i in range(n_mels):
        lower = -ramps[i] / fdiff[i]
        upper = ramps[i + 2] / fdiff[i + 1]
        weights[i] = np.maximum(0, np.minimum(lower, upper))
    enorm = 2.0 / (mel_f[2:n_mels + 2] - mel_f[:n_mels])
    return weights * enorm[:, None]


def whisper_features(samples, n_mels):
    """[windows * 3000, n_mels] normalised log-mel frames of `samples` (float64, 16 kHz)."""
    frames_with_audio = -(-(len(samples) + N_FFT // 2) // HOP)
    windows = -(-frames_with_audio // WINDOW_FRAMES)
    padded = np.zeros(windows * WINDOW_FRAMES * HOP)
    padded[: len(samples)] = samples
    stft = torch.stft(torch.from_numpy(padded), N_FFT, HOP, window=torch.hann_window(N_FFT, dtype=torch.float64),
                      center=True, pad_mode="reflect", return_complex=True)
    power = (stft[..., :-1].abs() ** 2).numpy()  # [201, windows * 3000]
    log_mel = np.log10(np.maximum(slaney_mel(n_mels) @ power, 1e-10)).T  # [frames, mels]
    out = []
    for w in range(windows):
        x = log_mel[w * WINDOW_FRAMES:(w + 1) * WINDOW_FRAMES]
        x = np.maximum(x, x.max() - 8.0)
        out.append((x + 4.0) / 4.0)
    return np.concatenate(out)


def main():
    samples = np.fromfile(sys.argv[1], dtype=np.float32).astype(np.float64)
    whisper_features(samples, int(sys.argv[3])).astype(np.float32).tofile(sys.argv[2])


if __name__ == "__main__":
    main()
