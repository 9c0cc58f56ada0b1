#!/usr/bin/env python3
"""Synthesises augmented 16 kHz speech from sentences with espeak-ng, flite and sox, in parallel.

Two outputs:
  --mode train: features only (no audio kept), in shards: <out>/shardNNNN.npy (float16
     [frames, 80], utterances concatenated) and <out>/shardNNNN.json ({"utts": [[offset, frames,
     text, voice], ...]}).
     Each utterance gets random TTS voice/variant/rate/pitch, sox speed 0.9-1.1, reverb,
     band-limiting, silence padding, additive noise (white/pink/brown/babble/music-like) at
     0-25 dB SNR or clean, and gain.
  --mode test: clean 16 kHz s16 wavs plus the same utterances with noise at each --snr-db,
     <out>/<condition>/<id>.wav and <out>/<condition>/manifest.tsv (id, path, text, voice).
     Test voices/variants are disjoint from training ones (see VOICES below).

Needs: numpy; espeak-ng, flite, sox on PATH (source recipes/data/tts_env.sh); torch+torchaudio
for --mode train (features are computed by recipes/train/features.py).
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import wave
from multiprocessing import Pool

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "train"))

SAMPLE_RATE_HZ = 16000
ESPEAK_PATH_ARG = os.environ.get("ESPEAK_PATH_ARG", "")

# Held-out test voices: espeak-ng voice en-gb-x-gbcwmd (any variant), the espeak-ng variants in
# TEST_VARIANTS (with any voice) and flite's awb are never used for training.
ESPEAK_TRAIN_VOICES = ["en-gb", "en-us", "en-gb-scotland", "en-gb-x-gbclan", "en-gb-x-rp",
                       "en-029", "en-us-nyc"]
ESPEAK_TEST_VOICES = ["en-gb-x-gbcwmd"]
TEST_VARIANTS = ["f3", "m3", "Annie", "john", "klatt3", "steph", "max", "linda", "edward", "aunty"]
ALL_VARIANTS = """Alex Alicia Andrea Andy Annie AnxiousAndy Demonic Denis Diogo Gene Gene2 Henrique
Hugo Jacky Lee Marco Mario Michael Mike Nguyen RicishayMax RicishayMax2 RicishayMax3 Storm Tweaky
UniRobot adam anika anikaRobot announcer antonio aunty belinda benjamin boris caleb croak david ed
edward edward2 f1 f2 f3 f4 f5 fast grandma grandpa gustave iven iven2 iven3 iven4 john kaukovalta
klatt klatt2 klatt3 klatt4 klatt5 klatt6 linda m1 m2 m3 m4 m5 m6 m7 m8 marcelo max michel miguel
norbert pablo paul pedro quincy rob robert robosoft robosoft2 robosoft3 robosoft4 robosoft5
robosoft6 robosoft7 robosoft8 sandro shelby steph steph2 steph3 travis victor whisper whisperf
zac""".split()
TRAIN_VARIANTS = [""] * 10 + [v for v in ALL_VARIANTS if v not in TEST_VARIANTS]
FLITE_TRAIN_VOICES = ["kal16", "slt", "rms", "kal", "slt", "rms"]
FLITE_TEST_VOICES = ["awb"]
NOISE_TYPES = ["white", "pink", "brown", "babble", "music"]


def plan_utterance(index, text, split, rng):
    """All random choices of one utterance, made in the parent so the data set is reproducible."""
    job = {"index": index, "text": text, "seed": rng.randrange(1 << 30), "split": split}
    if rng.random() < 0.45:
        job["engine"] = "flite"
        job["voice"] = rng.choice(FLITE_TRAIN_VOICES if split == "train" else FLITE_TEST_VOICES)
        job["stretch"] = rng.uniform(0.8, 1.3)
        job["f0_hz"] = rng.uniform(80, 210)
    else:
        job["engine"] = "espeak"
        if split == "train":
            job["voice"] = rng.choice(ESPEAK_TRAIN_VOICES)
            job["variant"] = rng.choice(TRAIN_VARIANTS)
        elif rng.random() < 0.5:
            job["voice"] = rng.choice(ESPEAK_TEST_VOICES)
            job["variant"] = rng.choice(TRAIN_VARIANTS + TEST_VARIANTS)
        else:
            job["voice"] = rng.choice(ESPEAK_TRAIN_VOICES)
            job["variant"] = rng.choice(TEST_VARIANTS)
        job["rate_wpm"] = rng.randint(120, 240)
        job["pitch"] = rng.randint(15, 85)
    if split == "train":
        job["speed"] = rng.uniform(0.9, 1.1)
        job["reverb"] = rng.randint(10, 80) if rng.random() < 0.25 else 0
        job["band"] = rng.choice([None] * 6 + ["300-3400", "200-4000", "100-6000", "150-7000"])
        job["pad_s"] = (rng.uniform(0.0, 0.4), rng.uniform(0.1, 0.5))
        job["noise"] = rng.choice(NOISE_TYPES) if rng.random() < 0.8 else None
        job["snr_db"] = rng.uniform(0, 25)
        job["gain_db"] = rng.uniform(-25, 0)
    else:
        job["speed"] = 1.0
        job["reverb"] = 0
        job["band"] = None
        job["pad_s"] = (0.2, 0.3)
        job["noise"] = None
        job["noise_for_test"] = rng.choice(NOISE_TYPES)
        job["gain_db"] = -3.0
    return job


def run_tts(job, tmp_wav):
    if job["engine"] == "flite":
        cmd = ["flite", "-voice", job["voice"], "--setf", f"duration_stretch={job['stretch']:.3f}",
               "--setf", f"int_f0_target_mean={job['f0_hz']:.1f}", "-t", job["text"], "-o", tmp_wav]
    else:
        voice = job["voice"] + ("+" + job["variant"] if job["variant"] else "")
        cmd = ["espeak-ng"] + ([ESPEAK_PATH_ARG] if ESPEAK_PATH_ARG else []) + [
            "-v", voice, "-s", str(job["rate_wpm"]), "-p", str(job["pitch"]), "-w", tmp_wav,
            job["text"]]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def run_sox(job, tmp_wav):
    effects = ["speed", f"{job['speed']:.3f}", "rate", str(SAMPLE_RATE_HZ)]
    if job["band"]:
        effects += ["sinc", job["band"]]
    if job["reverb"]:
        effects += ["reverb", str(job["reverb"])]
    effects += ["channels", "1", "pad", f"{job['pad_s'][0]:.3f}", f"{job['pad_s'][1]:.3f}"]
    cmd = ["sox", "-V1", tmp_wav, "-t", "raw", "-e", "signed", "-b", "16", "-"] + effects
    raw = subprocess.run(cmd, check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.int16).astype(np.float32)


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


_babble_pool = []  # recent clean utterances of this worker, the sources of babble noise


def make_noise(kind, length, rng, pool):
    if kind == "babble" and len(pool) >= 3:
        noise = np.zeros(length, dtype=np.float32)
        for k in rng.choice(len(pool), size=min(len(pool), int(rng.integers(3, 7))), replace=False):
            source = pool[k]
            if len(source) < length:
                source = np.tile(source, length // len(source) + 1)
            start = int(rng.integers(0, len(source) - length + 1))
            noise += source[start:start + length] / (np.std(source) + 1e-3)
        return noise
    if kind == "music":
        return music_noise(length, rng)
    return colored_noise("pink" if kind == "babble" else kind, length, rng)


def mix_at_snr(speech, noise, snr_db):
    speech_power = np.mean(speech ** 2) + 1e-6
    noise_power = np.mean(noise ** 2) + 1e-9
    return speech + noise * np.sqrt(speech_power / (noise_power * 10 ** (snr_db / 10)))


def to_int16_range(audio, gain_db, rng):
    peak = np.max(np.abs(audio)) + 1e-6
    audio = audio * (32000.0 / peak) * 10 ** (gain_db / 20)
    # A faint noise floor: real microphones never deliver digital silence.
    audio = audio + rng.standard_normal(len(audio)).astype(np.float32) * rng.uniform(0.5, 4.0)
    return np.clip(np.round(audio), -32768, 32767)


def synthesize(job):
    """TTS + sox for one planned utterance; returns float32 samples at 16 kHz (int16 scale)."""
    tmp_wav = f"/tmp/voxrt_synth_{os.getpid()}.wav"
    try:
        run_tts(job, tmp_wav)
        return run_sox(job, tmp_wav)
    finally:
        if os.path.exists(tmp_wav):
            os.remove(tmp_wav)


def train_worker(job):
    import features  # recipes/train/features.py (torch); imported in the worker only
    rng = np.random.default_rng(job["seed"])
    try:
        speech = synthesize(job)
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, str(error)
    if len(speech) < SAMPLE_RATE_HZ // 5:
        return job["index"], None, "too short"
    _babble_pool.append(speech)
    if len(_babble_pool) > 24:
        _babble_pool.pop(0)
    audio = speech
    if job["noise"]:
        audio = mix_at_snr(speech, make_noise(job["noise"], len(speech), rng, _babble_pool[:-1]),
                           job["snr_db"])
    audio = to_int16_range(audio, job["gain_db"], rng)
    feats = features.fbank(audio).astype(np.float16)
    return job["index"], feats, None


def test_worker(job):
    try:
        return job["index"], synthesize(job), None
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, str(error)


def write_wav(path, samples):
    with wave.open(path, "wb") as f:
        f.setnchannels(1)
        f.setsampwidth(2)
        f.setframerate(SAMPLE_RATE_HZ)
        f.writeframes(samples.astype(np.int16).tobytes())


def voice_name(job):
    if job["engine"] == "flite":
        return "flite:" + job["voice"]
    return "espeak:" + job["voice"] + ("+" + job["variant"] if job["variant"] else "")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--text", required=True, help="sentences, one a line")
    parser.add_argument("--out", required=True)
    parser.add_argument("--mode", choices=["train", "test"], required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--copies", type=int, default=1,
                        help="train: each sentence is synthesised this many times (new voices)")
    parser.add_argument("--shard-size", type=int, default=2000)
    parser.add_argument("--snr-db", default="20,10,5", help="test: noisy conditions")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # SIGTERM (the trainer is done) ends the worker pool too, through the `with Pool` exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with open(args.text) as f:
        sentences = [line.strip() for line in f if line.strip()]
    rng = random.Random(args.seed)
    jobs = [plan_utterance(i, text, args.mode, rng)
            for i, text in enumerate(s for _ in range(args.copies) for s in sentences)]
    failures = 0
    with Pool(args.jobs) as pool:
        if args.mode == "train":
            # Shards appear as they are finished (written under a temporary name, then renamed),
            # so training can start on the first shards while synthesis goes on.
            pending, shard_number = [], 0

            def write_shard():
                nonlocal pending, shard_number
                offsets = np.cumsum([0] + [len(feats) for _, feats in pending])
                base = os.path.join(args.out, f"shard{shard_number:04d}")
                np.save(base + ".tmp.npy", np.concatenate([feats for _, feats in pending]))
                utts = [[int(offsets[k]), len(feats), jobs[i]["text"], voice_name(jobs[i])]
                        for k, (i, feats) in enumerate(pending)]
                with open(base + ".tmp.json", "w") as f:
                    json.dump({"utts": utts}, f)
                os.rename(base + ".tmp.npy", base + ".npy")
                os.rename(base + ".tmp.json", base + ".json")
                shard_number += 1
                pending = []

            total_frames = 0
            for done, (index, feats, error) in enumerate(
                    pool.imap_unordered(train_worker, jobs, chunksize=16)):
                if feats is None:
                    failures += 1
                    continue
                pending.append((index, feats))
                total_frames += len(feats)
                if len(pending) >= args.shard_size:
                    write_shard()
                    print(f"synth {done + 1}/{len(jobs)} {total_frames / 360000:.2f} h", flush=True)
            if pending:
                write_shard()
            open(os.path.join(args.out, "DONE"), "w").close()
            print(f"train: {shard_number} shards, {total_frames / 360000:.2f} h, "
                  f"{failures} failed", flush=True)
        else:
            clean = {}
            for index, samples, error in pool.imap_unordered(test_worker, jobs, chunksize=4):
                if samples is None:
                    failures += 1
                    print("failed", index, error, file=sys.stderr)
                else:
                    clean[index] = samples
            order = sorted(clean)
            conditions = [("clean", None)] + [(f"snr{s}", float(s)) for s in args.snr_db.split(",")]
            for condition, snr_db in conditions:
                folder = os.path.join(args.out, condition)
                os.makedirs(folder, exist_ok=True)
                with open(os.path.join(folder, "manifest.tsv"), "w") as manifest:
                    for i in order:
                        job = jobs[i]
                        noise_rng = np.random.default_rng(job["seed"])  # same noise at each SNR
                        audio = clean[i]
                        if snr_db is not None:
                            pool_audio = [clean[k] for k in order if k != i][:200]
                            picks = [pool_audio[int(p)] for p in
                                     noise_rng.choice(len(pool_audio), 8, replace=False)]
                            noise = make_noise(job["noise_for_test"], len(audio), noise_rng, picks)
                            audio = mix_at_snr(audio, noise, snr_db)
                        audio = to_int16_range(audio, job["gain_db"], np.random.default_rng(i))
                        path = os.path.join(folder, f"utt{i:05d}.wav")
                        write_wav(path, audio)
                        manifest.write(f"utt{i:05d}\t{os.path.abspath(path)}\t{job['text']}\t"
                                       f"{voice_name(job)}\t{job.get('noise_for_test') if snr_db else 'none'}\n")
            print(f"test: {len(order)} utterances x {len(conditions)} conditions, "
                  f"{failures} failed", flush=True)


if __name__ == "__main__":
    main()
