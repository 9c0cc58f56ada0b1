#!/usr/bin/env python3
"""Guards against the CTC blank plateau of run 1 (recipes/RUNLOG.md), on the CPU (about 45 s of
CPU time), through train.py itself (its default recipe; only the sizes and step counts scaled
down):

1. A synthetic speech-like task whose features carry the text (every letter a spectral pattern
   of 3-6 frames, word gaps, silence pads, a random level per utterance as the recipe's gain
   augmentation makes, noise): shards in synth.py's format. train.py's defaults must leave the
   plateau within 150 steps: the loss per unit ends far below the unigram entropy of the units
   (the loss of a model that ignores its input), the output depends on the input (train.py's
   input_dependence), and greedy decoding of training utterances (evaluate.py --shards) gives
   a WER well under 100 %. Measured here (2026-12-06): the default (character units) 1.73 per
   unit against a plateau of 2.9, input dependence 0.62, WER 69 %; the same run with BPE 500
   units (run 1's) was still on its plateau at step 150 (3.55 against 3.74, input dependence
   0.14, every hypothesis empty), and so with a peak learning rate of 4e-3 (3.54).
2. What the recipe's pre-norm blocks protect against: every block of the original Conformer
   ends in a LayerNorm, and input-independent parts of the modules' outputs (what fitting the
   unit prior first grows) shrink the audio's share block after block (run 1's encoder ended
   with an input dependence of 1e-6). With the recipe's default norm the audio keeps its share
   through 10 blocks whose modules carry large constant outputs.

    /usr/bin/python3 test_plateau.py [--keep DIR]
Exits non-zero on a failure.
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "data"))
sys.path.insert(0, os.path.join(HERE, "..", "eval"))
import evaluate  # noqa: E402
import text_gen  # noqa: E402
import train  # noqa: E402
import units as units_module  # noqa: E402
from conformer import StreamingConformer  # noqa: E402
from wer import corpus_wer  # noqa: E402

LETTERS = " '" + "abcdefghijklmnopqrstuvwxyz"
# Sizes and step counts of this test; everything else is train.py's default recipe.
TINY = ["--d-model", "64", "--d-ff", "256", "--layers", "4", "--heads", "4", "--conv-kernel", "7",
        "--max-batch-frames", "4000", "--max-steps", "150", "--log-every", "25",
        "--warmup-steps", "30", "--knee-steps", "30", "--curriculum-steps", "40",
        "--specaug-after-steps", "40", "--concat-after-steps", "80", "--save-every-s", "1e9"]

failures = []


def check(condition, message):
    print(("ok   " if condition else "FAIL ") + message, flush=True)
    if not condition:
        failures.append(message)


def synthetic_utterance(text, templates, rng):
    """[frames, 80] log-mel-like features: each letter its template for 3-6 frames, a word gap
    of 1-3 frames of the space's template, 10-40 frames of near-silence around, one level for
    the whole utterance (like gain -30..0 dB: up to 7 in natural log), noise."""
    pieces = [templates["silence"] + np.zeros((rng.integers(10, 40), 1))]
    for k, letter in enumerate(text):
        frames = rng.integers(1, 4) if letter == " " else rng.integers(3, 7)
        pieces.append(np.repeat(templates[letter][None, :], frames, axis=0))
    pieces.append(templates["silence"] + np.zeros((rng.integers(10, 40), 1)))
    feats = np.concatenate(pieces) + rng.uniform(-7.0, 0.0)
    feats += rng.normal(0.0, 1.0, feats.shape)
    return feats.astype(np.float16)


def write_shards(folder, sentences, seed, shard_size=100):
    rng = np.random.default_rng(seed)
    templates = {letter: rng.normal(10.0, 3.0, 80) for letter in LETTERS}
    templates["silence"] = np.full(80, 2.0)
    os.makedirs(folder, exist_ok=True)
    for number, start in enumerate(range(0, len(sentences), shard_size)):
        utts, feats, offset = [], [], 0
        for text in sentences[start:start + shard_size]:
            f = synthetic_utterance(text, templates, rng)
            utts.append([offset, len(f), text, "synthetic"])
            feats.append(f)
            offset += len(f)
        base = os.path.join(folder, f"shard{number:04d}")
        np.save(base + ".npy", np.concatenate(feats))
        with open(base + ".json", "w") as f:
            json.dump({"utts": utts}, f)


def unigram_entropy(units, sentences):
    """Nats per unit of the units' unigram distribution: about the CTC loss per unit of a model
    that ignores its input (run 1 sat at 3.7 with BPE 500; the recipe's text has 3.76)."""
    counts = Counter(i for text in sentences for i in units.encode(text))
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values())


def check_training(work):
    rng = random.Random(11)
    sentences = [text for text in (text_gen.sentence(rng) for _ in range(400)) if text]
    data = os.path.join(work, "shards")
    write_shards(data, sentences, seed=3)
    ckpt = os.path.join(work, "ckpt")
    summary_path = os.path.join(work, "summary.json")
    env = dict(os.environ, OMP_NUM_THREADS="1")
    subprocess.run([sys.executable, os.path.join(HERE, "train.py"), "--data", data, "--out", ckpt,
                    "--train-seconds", "900", "--summary", summary_path] + TINY,
                   check=True, env=env)
    with open(summary_path) as f:
        summary = json.load(f)
    with open(os.path.join(ckpt, "checkpoint.json")) as f:
        units = units_module.from_config(json.load(f)["config"])
    plateau = unigram_entropy(units, sentences)
    loss = summary["final_loss"]
    dependence = summary["input_dependence"][-1][1]
    print(f"steps {summary['steps']}, loss/unit {summary['losses']}, plateau (unigram entropy) "
          f"{plateau:.2f}, input dependence {summary['input_dependence']}")
    check(loss < 0.75 * plateau, f"loss/unit {loss:.2f} far below the plateau {plateau:.2f}")
    check(dependence > 0.3, f"the output depends on the input: {dependence:.3f} > 0.3")
    model, info = evaluate.checkpoint.load(ckpt)
    rows = evaluate.read_shards(data, 40)
    hypotheses = evaluate.decode_features(model, torch.tensor(info["mean"]),
                                          torch.tensor(info["inv_std"]), rows, "cpu", units)
    result = corpus_wer([(text, hypotheses[key]) for key, _, text in rows])
    print("decoded:", [(text, hypotheses[key]) for key, _, text in rows[:3]])
    check(result["wer"] < 85, f"WER of 40 training utterances {result['wer']:.1f} % < 85 %")


def dependence_with_constant_outputs(norm, size):
    """Input dependence (train.input_dependence) of a 10-block encoder whose feed-forward
    modules add constant vectors of this size (as a model fitting the unit prior grows them)."""
    torch.manual_seed(1)
    model = StreamingConformer(vocab=50, d_model=64, d_ff=128, heads=4, layers=10, conv_kernel=7,
                               subsampling_channels=8, norm=norm)
    generator = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for layer in model.layers:
            for ff in (layer.ff1, layer.ff2):
                ff.down.bias.copy_(torch.randn(64, generator=generator) * size)
        model.head.weight.mul_(10.0)  # a confident head, as a trained one is
    feats = torch.randn(2, 200, 80, generator=generator)
    return train.input_dependence(train.OfflineForward(model), feats, torch.tensor([200, 200]))


def check_mechanism():
    default_norm = train.new_config(train.parse_args(["--data", "x", "--out", "y",
                                                      "--train-seconds", "1"]))["norm"]
    check(default_norm == "pre", f"the recipe's default norm is pre-norm (found {default_norm})")
    block = dependence_with_constant_outputs("block", 3.0)
    pre = dependence_with_constant_outputs("pre", 3.0)
    print(f"input dependence through 10 blocks with constant module outputs: block {block:.2e}, "
          f"pre {pre:.2e}")
    check(block < 1e-3, f"block norm loses the input ({block:.1e})")
    check(pre > 30 * block and pre > 5e-3, f"pre-norm keeps it ({pre:.1e})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", help="work in this folder and keep it")
    args = parser.parse_args()
    torch.set_num_threads(1)
    check_mechanism()
    work = args.keep or tempfile.mkdtemp(prefix="voxrt_plateau_")
    try:
        check_training(work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("PASS" if not failures else f"FAIL: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
