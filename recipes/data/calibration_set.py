#!/usr/bin/env python3
"""Builds an INT8 calibration set (`voxrt build --precision int8 --calibration-data DIR`): 16 kHz
wavs covering the conditions a deployed model meets, so that no activation range is calibrated
on one kind of audio only. The sentences of --text are spoken in turn by every espeak-ng
English training voice and every espeak-ng variant (every 8th by a flite training voice; about
110 sentences cover all variants), and each gets the next condition of:

  quiet       clean, a faint noise floor
  music       background music at 10 dB SNR
  kitchen     kitchen-like clanks and clicks at 10 dB SNR
  child       child-like voice: formants and pitch raised (vocal tract length 0.8, +5 semitones)
  far_field   far-field reverb: 4 m from the microphone in a 60 m^3 room, RT60 0.6 s
  silence     the utterance's length of near-silence (the pauses a live stream also carries)

Held-out voices (voices.py's test split) are never used, so a test set of recipes/data/synth.py
--mode test stays held out. Writes <out>/<condition>/<id>.wav and <out>/manifest.tsv
(id, path, text, voice, condition). Reuses synth.py/augment.py/voices.py; needs espeak-ng, flite
and sox (source recipes/data/tts_env.sh) and numpy.

  /usr/bin/python3 recipes/data/calibration_set.py --text sentences.txt --out calib/ --jobs 2
"""
import argparse
import os
import subprocess
import sys
from multiprocessing import Pool

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import augment  # noqa: E402
import synth  # noqa: E402
import voices  # noqa: E402

CONDITIONS = ["quiet", "music", "kitchen", "child", "far_field", "silence"]


def voice(index):
    """Sentence `index`'s voice: every 8th a flite training voice in turn, the others espeak-ng
    with the training voices and the variants (and none) each in their own turn, so that
    len(voices.TRAIN_VARIANTS) + 1 espeak sentences cover every variant (and every voice)."""
    if index % 8 == 7:
        flite = voices.FLITE_TRAIN_VOICES[(index // 8) % len(voices.FLITE_TRAIN_VOICES)]
        return {"engine": "flite", "voice": flite, "stretch": 1.0, "f0_hz": 120.0,
                "f0_stddev": 20.0}
    espeak = index - index // 8  # the espeak sentences' own count
    variants = [""] + voices.TRAIN_VARIANTS
    return {"engine": "espeak",
            "voice": voices.ESPEAK_TRAIN_VOICES[espeak % len(voices.ESPEAK_TRAIN_VOICES)],
            "variant": variants[espeak % len(variants)], "rate_wpm": 170, "pitch": 50,
            "range": "medium", "word_gap": 0}


def plan(index, text):
    job = {"index": index, "text": text, "condition": CONDITIONS[index % len(CONDITIONS)],
           "seed": 7919 * index + 1}
    job.update(voice(index))
    child = job["condition"] == "child"
    # sox speed 1.25 raises formants and pitch by a factor 1.25; pitch then sets F0 to +5
    # semitones overall (child-like: shorter vocal tract, higher F0).
    job["augment"] = {"vtlp": 1.25 if child else 1.0, "pitch_cents": 500.0 if child else 0.0,
                      "tempo": 1.0, "pad_s": (0.2, 0.3)}
    return job


def render(job):
    rng = np.random.default_rng(job["seed"])
    try:
        speech = synth.synthesize(job)
    except (subprocess.CalledProcessError, OSError) as error:
        return job["index"], None, str(error)
    condition = job["condition"]
    audio = speech
    if condition in ("music", "kitchen"):
        noise = augment.make_noise(condition, len(audio), rng, [])
        audio = augment.mix_at_snr(audio, noise, 10.0)
    elif condition == "far_field":
        room = {"rt60_s": 0.6, "distance_m": 4.0, "volume_m3": 60.0}
        audio = augment.convolve(audio, augment.room_impulse_response(room, rng))
    elif condition == "silence":
        # Only the faint floor that to_int16_range adds to every other condition.
        floor = rng.standard_normal(len(audio)).astype(np.float32) * rng.uniform(0.5, 4.0)
        return job["index"], np.clip(np.round(floor), -32768, 32767), None
    return job["index"], augment.to_int16_range(audio, -3.0, rng), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--text", required=True, help="sentences, one a line")
    parser.add_argument("--out", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    texts = [line.strip() for line in open(args.text) if line.strip()]
    jobs = [plan(i, text) for i, text in enumerate(texts)]
    failures = 0
    rows = []
    with Pool(args.jobs) as pool:
        for index, audio, error in pool.imap_unordered(render, jobs, chunksize=2):
            job = jobs[index]
            if audio is None:
                failures += 1
                print("failed", index, error, file=sys.stderr)
                continue
            folder = os.path.join(args.out, job["condition"])
            os.makedirs(folder, exist_ok=True)
            path = os.path.abspath(os.path.join(folder, f"cal{index:05d}.wav"))
            synth.write_wav(path, audio)
            rows.append((index, path, job))
    with open(os.path.join(args.out, "manifest.tsv"), "w") as manifest:
        for index, path, job in sorted(rows, key=lambda r: r[0]):
            manifest.write(f"cal{index:05d}\t{path}\t{job['text']}\t{voices.voice_name(job)}\t"
                           f"{job['condition']}\n")
    counts = {c: sum(1 for _, _, j in rows if j["condition"] == c) for c in CONDITIONS}
    print(f"calibration set: {len(rows)} utterances {counts}, {failures} failed", flush=True)


if __name__ == "__main__":
    main()
