"""The model's features: Kaldi fbank through torchaudio, with settings that are also written into
the ONNX metadata (FEATURE_METADATA) so voxrt's own fbank reproduces them.

Input samples are in int16 scale (-32768..32767), as Kaldi reads wav files: SAMPLE_SCALE says so.
"""
import os
import sys

import numpy as np
import torch

try:
    from torchaudio.compliance import kaldi
except ImportError:  # torchaudio builds without the compliance module
    import kaldi_fbank_fallback as kaldi

torch.set_num_threads(1)

FBANK_SETTINGS = dict(
    num_mel_bins=80, sample_frequency=16000.0, frame_length=25.0, frame_shift=10.0,
    dither=0.0, preemphasis_coefficient=0.97, window_type="povey", remove_dc_offset=True,
    snip_edges=True, low_freq=20.0, high_freq=0.0, energy_floor=1.0, use_energy=False,
    use_log_fbank=True, use_power=True, raw_energy=True, round_to_power_of_two=True)
SAMPLE_SCALE = 32768.0

# sherpa-onnx's front end (kaldi-native-fbank defaults as sherpa-onnx sets them), which voxrt
# uses for every model imported from icefall's layout (docs/model_contract.md): the transducer
# recipe (recipes/transducer) trains on these.
SHERPA_FBANK_SETTINGS = dict(FBANK_SETTINGS, snip_edges=False, high_freq=-400.0, energy_floor=0.0)
FEATURE_SETS = {"default": FBANK_SETTINGS, "sherpa": SHERPA_FBANK_SETTINGS}

FEATURE_METADATA = {
    "voxrt.feature.type": "fbank",
    "voxrt.feature.num_bins": "80",
    "voxrt.feature.sample_rate_hz": "16000",
    "voxrt.feature.frame_length_ms": "25",
    "voxrt.feature.frame_shift_ms": "10",
    "voxrt.feature.dither": "0",
    "voxrt.feature.preemphasis": "0.97",
    "voxrt.feature.window": "povey",
    "voxrt.feature.remove_dc_offset": "1",
    "voxrt.feature.snip_edges": "1",
    "voxrt.feature.low_freq_hz": "20",
    "voxrt.feature.high_freq_hz": "0",
    "voxrt.feature.sample_scale": "32768",
    "voxrt.feature.use_power": "1",
    "voxrt.feature.log_floor": "1.1920928955078125e-07",
    "voxrt.feature.round_to_power_of_two": "1",
}


def fbank(samples_int16_scale, feature_set="default"):
    """samples: 1-D array of 16 kHz samples in int16 scale -> float32 [frames, 80] (not normalised);
    feature_set: a key of FEATURE_SETS."""
    waveform = torch.as_tensor(np.asarray(samples_int16_scale, dtype=np.float32)).unsqueeze(0)
    return kaldi.fbank(waveform, **FEATURE_SETS[feature_set]).numpy()


# Whisper's front end (recipes/whisper): the log-mel of tests/unit/audio/whisper_mel_reference.py,
# which voxrt's whisper_log_mel front end is tested against. Imported on first use only: the
# default model's recipe must run from recipes/ alone (a device call that carried no tests/unit
# lost its whole training time to this import failing in every synthesis worker, 2026-12-07).
_WHISPER_REFERENCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                      "tests", "unit", "audio")


def _whisper_reference():
    if _WHISPER_REFERENCE_DIR not in sys.path:
        sys.path.insert(0, _WHISPER_REFERENCE_DIR)
    import whisper_mel_reference
    return whisper_mel_reference


WHISPER_LOG_FLOOR = -10.0  # log10(1e-10): the value of every frame of the zeros after the audio
WHISPER_MEL_BINS = 80
_whisper_filters = None


def whisper_log_mel(samples_int16_scale):
    """Whisper's log10 mel power of the frames that hold audio, float32 [frames, 80], before the
    per-window normalisation: frame f covers samples 160 f - 200 .. 160 f + 199 (torch.stft with
    center=True, the start reflected), and the frames after the audio see zeros, as in a window
    zero-padded to 30 s. Padding these frames to 3000 with WHISPER_LOG_FLOOR and normalising
    (whisper_window) gives whisper_mel_reference.whisper_features of the audio exactly."""
    global _whisper_filters
    whisper_mel = _whisper_reference()
    if _whisper_filters is None:
        _whisper_filters = whisper_mel.slaney_mel(WHISPER_MEL_BINS)
    samples = np.asarray(samples_int16_scale, dtype=np.float64) / SAMPLE_SCALE
    frames = -(-(len(samples) + whisper_mel.N_FFT // 2) // whisper_mel.HOP)
    # Zeros up to the last sample the last frame covers, so no frame reaches the reflected end.
    padded = np.zeros((frames - 1) * whisper_mel.HOP + whisper_mel.N_FFT // 2)
    padded[:len(samples)] = samples
    stft = torch.stft(torch.from_numpy(padded), whisper_mel.N_FFT, whisper_mel.HOP,
                      window=torch.hann_window(whisper_mel.N_FFT, dtype=torch.float64), center=True,
                      pad_mode="reflect", return_complex=True)
    power = (stft[..., :frames].abs() ** 2).numpy()
    return np.log10(np.maximum(_whisper_filters @ power, 1e-10)).T.astype(np.float32)


def compute(samples_int16_scale, feature_set="default"):
    """The features a synth.py shard holds: Kaldi fbank (FEATURE_SETS) or "whisper" (whisper_log_mel)."""
    if feature_set == "whisper":
        return whisper_log_mel(samples_int16_scale)
    return fbank(samples_int16_scale, feature_set)


def read_wav_int16(path):
    """Reads a 16-bit PCM wav (mono, 16 kHz) without torchaudio backends (none in some images)."""
    import wave
    with wave.open(path, "rb") as f:
        if f.getsampwidth() != 2 or f.getnchannels() != 1 or f.getframerate() != 16000:
            raise ValueError(f"{path}: expected 16 kHz mono s16, found {f.getframerate()} Hz, "
                             f"{f.getnchannels()} channels, {8 * f.getsampwidth()} bit")
        return np.frombuffer(f.readframes(f.getnframes()), dtype=np.int16).astype(np.float32)
