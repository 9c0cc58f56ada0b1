#!/usr/bin/env python3
"""Checks make_arpa.py: for every context of a small corpus, the probabilities that the ARPA
file gives (with backoff) over the whole vocabulary sum to 1, and seen n-grams beat unseen ones.
Run: /usr/bin/python3 recipes/lm/test_make_arpa.py"""
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def read_arpa(path):
    grams = {}
    order = 0
    with open(path) as f:
        section = 0
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("\\") and line.endswith("-grams:"):
                section = int(line[1:line.index("-")])
                order = max(order, section)
                continue
            if section and line and not line.startswith("\\"):
                parts = line.split("\t")
                words = tuple(parts[1].split())
                grams[words] = (float(parts[0]), float(parts[2]) if len(parts) > 2 else 0.0)
    return grams, order


def log10_prob(grams, context, word):
    ngram = tuple(context) + (word,)
    if ngram in grams:
        return grams[ngram][0]
    if not context:
        return grams[("<unk>",)][0]
    backoff = grams.get(tuple(context), (0.0, 0.0))[1]
    return backoff + log10_prob(grams, context[1:], word)


def main():
    corpus = ["play music", "play some music", "play the music loud", "stop the music",
              "set a timer for five minutes", "set an alarm for five", "turn on the lights",
              "turn off the lights in the kitchen", "play jazz in the kitchen"]
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "text.txt")
        arpa = os.path.join(tmp, "lm.arpa")
        open(text, "w").write("\n".join(corpus) + "\n")
        subprocess.run([sys.executable, os.path.join(HERE, "make_arpa.py"), "--text", text,
                        "--order", "3", "--out", arpa], check=True)
        grams, order = read_arpa(arpa)
    assert order == 3, order
    vocabulary = [w for (w,) in (g for g in grams if len(g) == 1) if w != "<s>"]
    contexts = {g[:-1] for g in grams if 1 < len(g)} | {()}
    contexts |= {("play", "jazz"), ("lights",), ("nonsense", "words")}
    for context in sorted(contexts):
        total = sum(10 ** log10_prob(grams, list(context), w) for w in vocabulary)
        assert abs(total - 1.0) < 1e-4, (context, total)
    seen = log10_prob(grams, ["play", "some"], "music")
    unseen = log10_prob(grams, ["play", "some"], "kitchen")
    assert seen > unseen + 1.0, (seen, unseen)
    print(f"ok: {len(contexts)} contexts normalised over {len(vocabulary)} words")


if __name__ == "__main__":
    main()
