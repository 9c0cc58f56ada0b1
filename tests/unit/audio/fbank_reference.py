"""Reference features for unit_audio: torchaudio.compliance.kaldi.fbank on the samples the C++
test wrote, computed in float32 (torchaudio's usual precision) and in float64 (the same code
without float32 rounding). Usage: fbank_reference.py MANIFEST, where each manifest line is
`IN.f32 OUT_STEM key=value...` (fbank keyword arguments); writes OUT_STEM.ref32.f32 and
OUT_STEM.ref64.f64. One process for all cases: importing torch costs seconds.
Exit status 3 when torchaudio is missing, so the test can skip visibly."""
import sys

try:
    import numpy as np
    import torch
    import torchaudio.compliance.kaldi as kaldi
except ImportError as error:  # pragma: no cover
    print(f"torchaudio unavailable: {error}", file=sys.stderr)
    sys.exit(3)


def convert(text):
    if text in ("True", "False"):
        return text == "True"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def main():
    torch.set_num_threads(1)
    with open(sys.argv[1]) as manifest:
        for line in manifest:
            fields = line.split()
            if not fields:
                continue
            samples = np.fromfile(fields[0], dtype=np.float32)
            options = {key: convert(value) for key, value in (f.split("=", 1) for f in fields[2:])}
            waveform = torch.from_numpy(samples).unsqueeze(0)
            single = kaldi.fbank(waveform, **options)
            double = kaldi.fbank(waveform.double(), **options)
            single.numpy().astype(np.float32).tofile(fields[1] + ".ref32.f32")
            double.numpy().astype(np.float64).tofile(fields[1] + ".ref64.f64")


if __name__ == "__main__":
    main()
