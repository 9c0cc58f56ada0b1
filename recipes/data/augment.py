"""Augmentation of synthetic speech, as a smart speaker across a room hears it. One plan per
utterance (random choices made in the parent, so a data set is reproducible from its seed), then
applied in this order:

1. sox: vocal-tract length / formant shift (speed by a factor, pitch shifted back by the same
   amount, so formants move and F0 stays), an extra pitch shift, tempo, 16 kHz, silence pads;
2. a simulated room: a synthetic impulse response (direct path, early reflections, an
   exponentially decaying diffuse tail) at an RT60 of 0.15-1.0 s, its direct-to-reverberant ratio
   from the distance (0.3-5 m) against the room's critical distance;
3. additive noise at -5..25 dB SNR: stationary (white, pink, brown), babble (3-6 other
   utterances), music-like (chords of harmonic tones), kitchen-like (impulsive clanks, clicks and
   running-water bursts);
4. the channel: telephone (300-3400 Hz at 8 kHz) or wideband (50-7000 Hz) band limits, and codec
   round trips: GSM 06.10 (sox), mu-law and A-law at 8 kHz, MP3 (lame, or sox with
   libsox-fmt-mp3), Ogg Vorbis (sox), Opus (opusenc/opusdec);
5. gain (-30..0 dB) and sometimes clipping (the peak driven 1-12 dB past full scale).
Needs sox (and lame, opus-tools for those codecs: a codec whose tool is missing is replaced by
none, and counted in synth_stats.json).
"""
import math
import os
import shutil
import subprocess
import tempfile

import numpy as np

SAMPLE_RATE_HZ = 16000
NOISE_TYPES = ["white", "pink", "brown", "babble", "music", "kitchen"]
CODECS = ["gsm", "mulaw", "alaw", "mp3", "vorbis", "opus"]
SPEED_OF_SOUND_M_S = 343.0


def available_codecs():
    """The codecs this machine's tools can round-trip (checked once per worker). sox loads GSM,
    MP3 and Vorbis from plugins in its build-time folder only, so where sox runs from an
    unpacked prefix (the GPU machine) they are missing; MP3 then goes through the lame CLI."""
    found = ["mulaw", "alaw"]
    formats = " " + subprocess.run(["sox", "-h"], capture_output=True, text=True).stdout.split(
        "AUDIO FILE FORMATS:")[-1].split("\n")[0] + " "
    if " gsm " in formats:
        found.append("gsm")
    if " mp3 " in formats or shutil.which("lame"):
        found.append("mp3")
    if " vorbis " in formats:
        found.append("vorbis")
    if shutil.which("opusenc") and shutil.which("opusdec"):
        found.append("opus")
    return found


def plan_augmentation(rng):
    """Random augmentation choices of one training utterance (rng: random.Random)."""
    plan = {
        "vtlp": rng.uniform(0.85, 1.18) if rng.random() < 0.6 else 1.0,
        "pitch_cents": rng.uniform(-300, 300) if rng.random() < 0.4 else 0.0,
        "tempo": rng.uniform(0.8, 1.25) if rng.random() < 0.5 else 1.0,
        "pad_s": (rng.uniform(0.0, 0.4), rng.uniform(0.1, 0.5)),
        "room": None, "noise": None, "channel": None, "clip_db": 0.0,
        "gain_db": rng.uniform(-30, 0),
    }
    if rng.random() < 0.5:
        plan["room"] = {"rt60_s": rng.uniform(0.15, 1.0), "distance_m": rng.uniform(0.3, 5.0),
                        "volume_m3": rng.uniform(20, 250), "seed": rng.randrange(1 << 30)}
    if rng.random() < 0.8:
        plan["noise"] = {"kind": rng.choice(NOISE_TYPES), "snr_db": rng.uniform(-5, 25)}
    channel = rng.random()
    if channel < 0.12:
        plan["channel"] = {"band": "telephone"}
    elif channel < 0.2:
        plan["channel"] = {"band": "wideband"}
    elif channel < 0.42:
        codec = rng.choice(CODECS)
        plan["channel"] = {"codec": codec, "bitrate_kbps": rng.choice(
            {"mp3": [16, 24, 32, 48], "opus": [6, 8, 12, 16, 24], "vorbis": [-1, 0, 2]}.get(
                codec, [0]))}
    if rng.random() < 0.08:
        plan["clip_db"] = rng.uniform(1, 12)
    return plan


def plan_clean(rng):
    """A training utterance without augmentation: the voice's own speech at a random gain, with
    the same silence pads (and the faint noise floor of to_int16_range) as an augmented one."""
    return {"vtlp": 1.0, "pitch_cents": 0.0, "tempo": 1.0,
            "pad_s": (rng.uniform(0.0, 0.4), rng.uniform(0.1, 0.5)),
            "room": None, "noise": None, "channel": None, "clip_db": 0.0,
            "gain_db": rng.uniform(-30, 0)}


def sox_effects(plan):
    """The sox effect chain of step 1 (the input is the TTS wav at its own rate)."""
    effects = []
    if plan["vtlp"] != 1.0:
        # speed scales formants and F0 by vtlp; pitch brings F0 back (cents), formants stay moved.
        effects += ["speed", f"{plan['vtlp']:.4f}"]
    cents = plan["pitch_cents"] - (1200 * math.log2(plan["vtlp"]) if plan["vtlp"] != 1.0 else 0)
    if abs(cents) > 1:
        effects += ["pitch", f"{cents:.1f}"]
    if plan["tempo"] != 1.0:
        effects += ["tempo", "-s", f"{plan['tempo']:.4f}"]
    effects += ["rate", str(SAMPLE_RATE_HZ), "channels", "1",
                "pad", f"{plan['pad_s'][0]:.3f}", f"{plan['pad_s'][1]:.3f}"]
    return effects


def run_sox(in_wav, effects):
    """-> float32 samples at 16 kHz in int16 scale. -R: repeatable dither (same seed, same clip)."""
    cmd = ["sox", "-V1", "-R", in_wav, "-t", "raw", "-e", "signed", "-b", "16", "-"] + effects
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.int16).astype(np.float32)


def room_impulse_response(room, rng):
    """A synthetic RIR at 16 kHz: direct path at 1/r, sparse early reflections, then a diffuse
    tail of noise decaying 60 dB in rt60_s, whose energy sets the direct-to-reverberant ratio
    (critical distance 0.057 sqrt(V / RT60) m, Sabine)."""
    rt60, distance = room["rt60_s"], room["distance_m"]
    length = int(min(1.2, rt60 * 1.1) * SAMPLE_RATE_HZ)
    t = np.arange(length, dtype=np.float32) / SAMPLE_RATE_HZ
    delay = int(distance / SPEED_OF_SOUND_M_S * SAMPLE_RATE_HZ)
    rir = np.zeros(length + delay, dtype=np.float32)
    rir[delay] = 1.0
    decay = np.exp(-6.908 * t / rt60).astype(np.float32)
    tail = rng.standard_normal(length).astype(np.float32) * decay
    onset = int(0.004 * SAMPLE_RATE_HZ)  # the diffuse field builds up over a few ms
    tail[:onset] *= np.linspace(0, 1, onset, dtype=np.float32)
    for _ in range(int(rng.integers(4, 10))):  # early reflections, 2-30 ms after the direct path
        k = int(rng.uniform(0.002, 0.03) * SAMPLE_RATE_HZ)
        tail[k] += rng.uniform(-0.8, 0.8) * math.exp(-6.908 * k / SAMPLE_RATE_HZ / rt60)
    critical_m = 0.057 * math.sqrt(room["volume_m3"] / rt60)
    drr = (critical_m / distance) ** 2  # direct / reverberant energy
    tail *= math.sqrt(1.0 / (drr * float(np.sum(tail ** 2)) + 1e-12))
    rir[delay:] += tail
    return rir / (np.max(np.abs(rir)) + 1e-9)


def convolve(audio, rir):
    n = len(audio) + len(rir) - 1
    size = 1 << (n - 1).bit_length()
    out = np.fft.irfft(np.fft.rfft(audio, size) * np.fft.rfft(rir, size), size)[:len(audio)]
    return out.astype(np.float32)


def colored_noise(kind, length, rng):
    white = rng.standard_normal(length).astype(np.float32)
    if kind == "white":
        return white
    spectrum = np.fft.rfft(white)
    freqs = np.arange(len(spectrum), dtype=np.float32) + 1.0
    spectrum /= np.sqrt(freqs) if kind == "pink" else freqs  # pink 1/f power, brown 1/f^2
    return np.fft.irfft(spectrum, n=length).astype(np.float32)


def music_noise(length, rng):
    """Music-like: chords of harmonic tones that change every 0.15-0.6 s."""
    out = np.zeros(length, dtype=np.float32)
    position = 0
    while position < length:
        seg = min(length - position, int(rng.uniform(0.15, 0.6) * SAMPLE_RATE_HZ))
        t = np.arange(seg, dtype=np.float32) / SAMPLE_RATE_HZ
        envelope = np.exp(-t * rng.uniform(1, 8)).astype(np.float32)
        for _ in range(rng.integers(1, 4)):
            f0 = 110.0 * 2 ** (rng.integers(0, 36) / 12.0)
            for harmonic in range(1, 5):
                out[position:position + seg] += envelope * np.sin(
                    2 * np.pi * f0 * harmonic * t + rng.uniform(0, 6.28)) / harmonic
        position += seg
    return out


def kitchen_noise(length, rng):
    """Kitchen-like: impulsive events (a clank: a few decaying resonances; a click; a cutlery
    rattle) at random times over a low hum, sometimes with a burst of running water."""
    out = 0.02 * colored_noise("brown", length, rng)
    events = int(rng.integers(2, 4 + length // SAMPLE_RATE_HZ * 2))
    for _ in range(events):
        start = int(rng.integers(0, max(1, length - 1)))
        kind = rng.integers(0, 3)
        seg = min(length - start, int(rng.uniform(0.05, 0.6) * SAMPLE_RATE_HZ))
        if seg <= 0:
            continue
        t = np.arange(seg, dtype=np.float32) / SAMPLE_RATE_HZ
        if kind == 0:  # clank: metal resonances
            burst = sum(np.sin(2 * np.pi * rng.uniform(400, 5000) * t + rng.uniform(0, 6.28))
                        for _ in range(int(rng.integers(2, 6))))
            burst = burst * np.exp(-t * rng.uniform(8, 40))
        elif kind == 1:  # click
            burst = rng.standard_normal(seg) * np.exp(-t * rng.uniform(200, 800))
        else:  # rattle: a train of short clicks
            burst = rng.standard_normal(seg) * (rng.random(seg) < 0.01) * 3.0
        out[start:start + seg] += rng.uniform(0.3, 1.5) * burst.astype(np.float32)
    if rng.random() < 0.4:  # running water: band-passed noise with a slow swell
        water = colored_noise("white", length, rng)
        spectrum = np.fft.rfft(water)
        freqs = np.fft.rfftfreq(length, 1.0 / SAMPLE_RATE_HZ)
        spectrum[(freqs < 1000) | (freqs > 6000)] *= 0.1
        water = np.fft.irfft(spectrum, n=length).astype(np.float32)
        out += 0.3 * water * (0.6 + 0.4 * np.sin(np.linspace(0, rng.uniform(1, 6), length)))
    return out


def make_noise(kind, length, rng, babble_pool):
    if kind == "babble" and len(babble_pool) >= 3:
        noise = np.zeros(length, dtype=np.float32)
        picks = rng.choice(len(babble_pool), size=min(len(babble_pool), int(rng.integers(3, 7))),
                           replace=False)
        for k in picks:
            source = babble_pool[k]
            if len(source) < length:
                source = np.tile(source, length // len(source) + 1)
            start = int(rng.integers(0, len(source) - length + 1))
            noise += source[start:start + length] / (np.std(source) + 1e-3)
        return noise
    if kind == "music":
        return music_noise(length, rng)
    if kind == "kitchen":
        return kitchen_noise(length, rng)
    return colored_noise("pink" if kind == "babble" else kind, length, rng)


def mix_at_snr(speech, noise, snr_db):
    speech_power = np.mean(speech ** 2) + 1e-6
    noise_power = np.mean(noise ** 2) + 1e-9
    return speech + noise * np.sqrt(speech_power / (noise_power * 10 ** (snr_db / 10)))


def _sox_pipe(samples, encode_args, decode_args):
    """Round trip through a format: raw 16 kHz s16 -> sox encode -> sox decode -> raw 16 kHz."""
    raw = np.clip(np.round(samples), -32768, 32767).astype(np.int16).tobytes()
    source = ["-t", "raw", "-r", str(SAMPLE_RATE_HZ), "-e", "signed", "-b", "16", "-c", "1", "-"]
    encoded = subprocess.run(["sox", "-V1", "-R"] + source + encode_args, input=raw,
                             capture_output=True, check=True).stdout
    decoded = subprocess.run(["sox", "-V1", "-R"] + decode_args + [
        "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", "-", "rate", str(SAMPLE_RATE_HZ)],
        input=encoded, capture_output=True, check=True).stdout
    out = np.frombuffer(decoded, dtype=np.int16).astype(np.float32)
    # Codecs add a little delay or trailing padding: keep the original length.
    if len(out) < len(samples):
        out = np.pad(out, (0, len(samples) - len(out)))
    return out[:len(samples)]


def _lame_round_trip(samples, bitrate_kbps):
    with tempfile.TemporaryDirectory(prefix="voxrt_mp3_") as folder:
        mp3, back = os.path.join(folder, "x.mp3"), os.path.join(folder, "out.wav")
        raw = np.clip(np.round(samples), -32768, 32767).astype(np.int16).tobytes()
        subprocess.run(["lame", "--quiet", "-r", "-s", "16", "--bitwidth", "16", "--signed",
                        "--little-endian", "-m", "m", "-b", str(bitrate_kbps), "-", mp3],
                       input=raw, check=True, capture_output=True)
        subprocess.run(["lame", "--quiet", "--decode", mp3, back], check=True, capture_output=True)
        decoded = subprocess.run(["sox", "-V1", back, "-t", "raw", "-e", "signed", "-b", "16",
                                  "-c", "1", "-", "rate", str(SAMPLE_RATE_HZ)],
                                 capture_output=True, check=True).stdout
    out = np.frombuffer(decoded, dtype=np.int16).astype(np.float32)
    return np.pad(out, (0, max(0, len(samples) - len(out))))[:len(samples)]


def _opus_round_trip(samples, bitrate_kbps):
    with tempfile.TemporaryDirectory(prefix="voxrt_opus_") as folder:
        wav, opus, back = (os.path.join(folder, n) for n in ("in.wav", "x.opus", "out.wav"))
        raw = np.clip(np.round(samples), -32768, 32767).astype(np.int16).tobytes()
        subprocess.run(["sox", "-V1", "-t", "raw", "-r", str(SAMPLE_RATE_HZ), "-e", "signed",
                        "-b", "16", "-c", "1", "-", wav], input=raw, check=True)
        subprocess.run(["opusenc", "--quiet", "--bitrate", str(bitrate_kbps), wav, opus],
                       check=True, capture_output=True)
        subprocess.run(["opusdec", "--quiet", "--rate", str(SAMPLE_RATE_HZ), opus, back],
                       check=True, capture_output=True)
        decoded = subprocess.run(["sox", "-V1", back, "-t", "raw", "-e", "signed", "-b", "16",
                                  "-c", "1", "-"], capture_output=True, check=True).stdout
    out = np.frombuffer(decoded, dtype=np.int16).astype(np.float32)
    return np.pad(out, (0, max(0, len(samples) - len(out))))[:len(samples)]


def apply_channel(samples, channel, codecs):
    """Band limit or codec round trip (step 4). Returns (samples, what was applied)."""
    if channel is None:
        return samples, "none"
    if channel.get("band") == "telephone":
        return _sox_pipe(samples, ["-t", "raw", "-e", "signed", "-b", "16", "-r", "8000", "-",
                                   "sinc", "300-3400"],
                         ["-t", "raw", "-r", "8000", "-e", "signed", "-b", "16", "-c", "1", "-"]), \
            "telephone"
    if channel.get("band") == "wideband":
        return _sox_pipe(samples, ["-t", "raw", "-e", "signed", "-b", "16", "-", "sinc", "50-7000"],
                         ["-t", "raw", "-r", str(SAMPLE_RATE_HZ), "-e", "signed", "-b", "16",
                          "-c", "1", "-"]), "wideband"
    codec = channel["codec"]
    if codec not in codecs:
        return samples, "none (no " + codec + ")"
    eight_khz = ["-r", "8000", "-c", "1"]
    if codec == "gsm":
        return _sox_pipe(samples, ["-t", "gsm"] + eight_khz + ["-"], ["-t", "gsm", "-r", "8000",
                                                                       "-"]), codec
    if codec in ("mulaw", "alaw"):
        encoding = "mu-law" if codec == "mulaw" else "a-law"
        return _sox_pipe(samples, ["-t", "raw", "-e", encoding, "-b", "8"] + eight_khz + ["-"],
                         ["-t", "raw", "-e", encoding, "-b", "8", "-r", "8000", "-c", "1", "-"]), \
            codec
    if codec == "mp3":
        if shutil.which("lame"):
            return _lame_round_trip(samples, channel["bitrate_kbps"]), \
                f"mp3 {channel['bitrate_kbps']} kbps"
        return _sox_pipe(samples, ["-t", "mp3", "-C", str(channel["bitrate_kbps"]), "-"],
                         ["-t", "mp3", "-"]), f"mp3 {channel['bitrate_kbps']} kbps"
    if codec == "vorbis":
        return _sox_pipe(samples, ["-t", "ogg", "-C", str(channel["bitrate_kbps"]), "-"],
                         ["-t", "ogg", "-"]), f"vorbis q{channel['bitrate_kbps']}"
    return _opus_round_trip(samples, channel["bitrate_kbps"]), \
        f"opus {channel['bitrate_kbps']} kbps"


def to_int16_range(audio, gain_db, rng, clip_db=0.0):
    """Gain (the peak at gain_db below full scale, or clip_db past it: clipping) and a faint
    noise floor (real microphones never deliver digital silence)."""
    peak = np.max(np.abs(audio)) + 1e-6
    audio = audio * (32000.0 / peak) * 10 ** ((clip_db if clip_db > 0 else gain_db) / 20)
    audio = audio + rng.standard_normal(len(audio)).astype(np.float32) * rng.uniform(0.5, 4.0)
    return np.clip(np.round(audio), -32768, 32767)


def augment(speech, plan, rng, babble_pool, codecs):
    """Steps 2-5 on 16 kHz speech (int16 scale). Returns (samples, channel description)."""
    audio = speech
    if plan["room"]:
        audio = convolve(audio, room_impulse_response(
            plan["room"], np.random.default_rng(plan["room"]["seed"])))
    if plan["noise"]:
        noise = make_noise(plan["noise"]["kind"], len(audio), rng, babble_pool)
        audio = mix_at_snr(audio, noise, plan["noise"]["snr_db"])
    audio = audio * (30000.0 / (np.max(np.abs(audio)) + 1e-6))  # full scale for the codecs
    audio, channel = apply_channel(audio, plan["channel"], codecs)
    return to_int16_range(audio, plan["gain_db"], rng, plan["clip_db"]), channel
