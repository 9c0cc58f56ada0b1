#!/usr/bin/env python3
"""A long-stream test set from our synthetic speech: the same utterances as separate clips and as
one continuous recording, so a continuous stream's WER can be compared with the WER of the clips
cut apart (issue 31: the model's state must be reset or re-anchored at endpoints).

Sentences come from recipes/data/text_gen.py, speech from recipes/data/synth.py's held-out test
voices (espeak-ng and flite, no augmentation, 0.2 s / 0.3 s of silence around each utterance).

  long_stream_set.py --out DIR [--count 40] [--seed 1001] [--pause-s 0.5] [--exclude FILE]

writes DIR/clips/uttNNNNN.wav (one utterance each, with its own silence padding),
DIR/clips.tsv (path, text), DIR/long.wav (every utterance's speech, --pause-s of silence between
them, the same padding at both ends) and DIR/long.txt (the reference: all sentences in order).
Needs numpy, espeak-ng, flite and sox (Debian's /usr/bin/python3).
"""
import argparse
import os
import random
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
RECIPES_DATA = os.path.join(HERE, "..", "..", "recipes", "data")
sys.path.insert(0, RECIPES_DATA)
import augment  # noqa: E402
import synth  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--count", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1001)
    parser.add_argument("--pause-s", type=float, default=0.5)
    parser.add_argument("--exclude", help="sentences that must not be used (e.g. an LM's text)")
    args = parser.parse_args()
    text = subprocess.run([sys.executable, os.path.join(RECIPES_DATA, "text_gen.py"), "--count",
                           str(args.count), "--seed", str(args.seed)] +
                          (["--exclude", args.exclude] if args.exclude else []),
                          check=True, capture_output=True, text=True).stdout
    sentences = [line.strip() for line in text.splitlines() if line.strip()]
    rng = random.Random(args.seed)
    jobs = [synth.plan_utterance(i, s, "test", rng) for i, s in enumerate(sentences)]
    os.makedirs(os.path.join(args.out, "clips"), exist_ok=True)
    rate = synth.SAMPLE_RATE_HZ
    noise_rng = np.random.default_rng(args.seed)

    def silence(seconds):  # the clips' noise floor, so pauses are not digital silence
        return np.round(noise_rng.standard_normal(int(round(seconds * rate))) * 2.0)

    long_parts = []
    with open(os.path.join(args.out, "clips.tsv"), "w") as manifest:
        for job in jobs:
            # int16 scale, job["pad_s"] of silence around the speech; peak-normalised with a
            # faint noise floor as synth.py's test clips.
            clip = synth.synthesize(job)
            clip = augment.to_int16_range(clip, job["gain_db"], np.random.default_rng(job["index"]))
            path = os.path.join(args.out, "clips", f"utt{job['index']:05d}.wav")
            synth.write_wav(path, clip)
            manifest.write(f"{os.path.abspath(path)}\t{job['text']}\n")
            lead, trail = (int(round(p * rate)) for p in job["augment"]["pad_s"])
            speech = clip[lead:len(clip) - trail]
            if long_parts:
                long_parts.append(silence(args.pause_s))
            long_parts.append(speech)
    lead, trail = (silence(p) for p in jobs[0]["augment"]["pad_s"])
    long_audio = np.concatenate([lead] + long_parts + [trail])
    synth.write_wav(os.path.join(args.out, "long.wav"), long_audio)
    with open(os.path.join(args.out, "long.txt"), "w") as f:
        f.write(" ".join(job["text"] for job in jobs) + "\n")
    print(f"{len(jobs)} utterances, long.wav {len(long_audio) / rate:.1f} s")


if __name__ == "__main__":
    main()
