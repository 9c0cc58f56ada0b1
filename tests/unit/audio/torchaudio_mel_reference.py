"""Reference for unit_audio's torchaudio front end: torchaudio's own RNN-T pipeline feature steps
(torchaudio.pipelines.RNNTBundle.get_feature_extractor, without the global stats and the right
padding): MelSpectrogram(16 kHz, n_fft 400, hop 160, MEL_BINS) over the whole input, times the
pipeline's gain (32767^2), the piecewise-linear log. Usage: torchaudio_mel_reference.py IN.f32
OUT.f32 MEL_BINS (frames x bins, float32). Exit status 3 when torchaudio is missing."""
import math
import sys

try:
    import numpy as np
    import torch
    import torchaudio
except ImportError as error:  # pragma: no cover
    print(f"torchaudio unavailable: {error}", file=sys.stderr)
    sys.exit(3)

GAIN = pow(10, 0.05 * (2 * 20 * math.log10(torch.iinfo(torch.int16).max)))


def main():
    samples = torch.from_numpy(np.fromfile(sys.argv[1], dtype=np.float32))
    mel = torchaudio.transforms.MelSpectrogram(sample_rate=16000, n_fft=400, n_mels=int(sys.argv[3]),
                                               hop_length=160)
    x = mel(samples).transpose(1, 0) * GAIN
    x = torch.where(x > math.e, torch.log(x), x / math.e)
    x.numpy().astype(np.float32).tofile(sys.argv[2])


if __name__ == "__main__":
    main()
