#!/usr/bin/env python3
"""Real human speech, side by side: our checkpoint vs Debian's pocketsphinx (en-us acoustic model,
en-us.lm.bin, cmudict) on the same wavs of pocketsphinx-testdata (cards, librivox), same run.

    /usr/bin/python3 real_speech.py --checkpoint CKPT [--out results.json]
Also usable on any manifest (id, wav, text) with --manifest NAME=PATH.
"""
import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import evaluate  # noqa: E402
from pocketsphinx import decode as pocketsphinx_decode  # noqa: E402
from wer import corpus_wer  # noqa: E402

DATA = "/usr/share/pocketsphinx/test/data"


def pocketsphinx_manifests(folder):
    """Manifests for cards and librivox from their '<s> text </s> (id)' transcription files."""
    sets = {"cards": ("cards/cards.transcription", "cards/{}.wav"),
            "librivox": ("librivox/transcription", "librivox/{}.wav")}
    paths = {}
    os.makedirs(folder, exist_ok=True)
    for name, (transcription, wav) in sets.items():
        path = os.path.join(folder, f"{name}.tsv")
        with open(os.path.join(DATA, transcription)) as f, open(path, "w") as out:
            for line in f:
                match = re.match(r"\s*<s>(.*)</s>\s*\((.+)\)", line)
                if match:
                    key = match.group(2).strip()
                    out.write(f"{key}\t{os.path.join(DATA, wav.format(key))}\t"
                              f"{match.group(1).strip()}\n")
        paths[name] = path
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--manifest", action="append", default=[], help="NAME=PATH (extra sets)")
    parser.add_argument("--out")
    parser.add_argument("--hyp-dir", default="/tmp/voxrt-real-hyp")
    args = parser.parse_args()
    manifests = pocketsphinx_manifests(args.hyp_dir)
    manifests.update(dict(m.split("=", 1) for m in args.manifest))
    ours = evaluate.evaluate(args.checkpoint, list(manifests.items()), "cpu", args.hyp_dir)
    results = {}
    for name, path in manifests.items():
        rows = evaluate.read_manifest(path)
        start = time.time()
        hyps = {key: pocketsphinx_decode(wav) for key, wav, _ in rows}
        sphinx = corpus_wer([(text, hyps[key]) for key, _, text in rows])
        sphinx["decode_s"] = round(time.time() - start, 1)
        with open(os.path.join(args.hyp_dir, f"{name}.pocketsphinx.tsv"), "w") as f:
            for key, _, text in rows:
                f.write(f"{key}\t{hyps[key]}\t{text}\n")
        results[name] = {"voxrt_pytorch": ours[name], "pocketsphinx": sphinx}
        print(f"{name}: ours {ours[name]['wer']:.1f} %  pocketsphinx {sphinx['wer']:.1f} % "
              f"({sphinx['words']} words)", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
